#pragma once

// The kernels' half of what a tensor format is: how the scalar reference
// decodes it and whether MatMulRowsQ8 (q8_activations.h) takes it. The other
// half, the bytes (blocks, scales), is kFormatTraits in
// common/format/tensor_format.h; the SIMD decoders are a type table per ISA
// family, RowOf in matmul_driver-inl.h. A new format is one row here.
//
// Thread-safe: constants.

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "common/format/tensor_format.h"
#include "common/kernels/matrix_view.h"

namespace warp::kernels {

// Columns [col, col + n) of row `row` of `w`, as DequantizeRow defines them.
// REQUIRES: n <= 16 and [col, col + n) inside one block (of 16 elements for
// the k-quants' sub-blocks).
using ChunkDecoder = void (*)(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n,
                              float* out);

// The 8-bit-activation path (MatMulRowsQ8) of a format: none, or the 4-bit
// codes it reads, integers (nibble - 8) or E2M1 values.
enum class Q8Codes { kNone, kInt4, kE2M1 };

namespace internal {
// The scalar decoders, in format_kernels.cc (built -ffp-contract=off).
void DecodeF32(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeF16(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeBf16(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
// f8_e4m3_b128 and f8_e4m3_b32: one decoder over the scales' tile edge
// (instantiated for both in format_kernels.cc).
template <uint64_t kTile>
void DecodeF8E4M3(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeQ8B32(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeQ4B32(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeMxfp4B32(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ8_0(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ4_0(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlMxfp4(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ4_1(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ5_0(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ5_1(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ2_K(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ3_K(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ4_K(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ5_K(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeGgmlQ6_K(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
void DecodeVq3rB32(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
}  // namespace internal

struct FormatKernels {
  TensorFormat format;
  ChunkDecoder decode_chunk;  // the scalar reference, called once per 16 columns
  Q8Codes q8;
};

// One row per TensorFormat, in the enum's order.
inline constexpr FormatKernels kFormatKernels[] = {
    {TensorFormat::kF32, internal::DecodeF32, Q8Codes::kNone},
    {TensorFormat::kF16, internal::DecodeF16, Q8Codes::kNone},
    {TensorFormat::kBF16, internal::DecodeBf16, Q8Codes::kNone},
    {TensorFormat::kF8E4M3B128, internal::DecodeF8E4M3<kFp8Block128>, Q8Codes::kNone},
    {TensorFormat::kQ8B32, internal::DecodeQ8B32, Q8Codes::kNone},
    {TensorFormat::kQ4B32, internal::DecodeQ4B32, Q8Codes::kInt4},
    {TensorFormat::kMxfp4B32, internal::DecodeMxfp4B32, Q8Codes::kE2M1},
    {TensorFormat::kGgmlQ8_0, internal::DecodeGgmlQ8_0, Q8Codes::kNone},
    {TensorFormat::kGgmlQ4_0, internal::DecodeGgmlQ4_0, Q8Codes::kInt4},
    {TensorFormat::kGgmlMxfp4, internal::DecodeGgmlMxfp4, Q8Codes::kE2M1},
    {TensorFormat::kGgmlQ4_1, internal::DecodeGgmlQ4_1, Q8Codes::kNone},
    {TensorFormat::kGgmlQ5_0, internal::DecodeGgmlQ5_0, Q8Codes::kNone},
    {TensorFormat::kGgmlQ5_1, internal::DecodeGgmlQ5_1, Q8Codes::kNone},
    {TensorFormat::kGgmlQ2_K, internal::DecodeGgmlQ2_K, Q8Codes::kNone},
    {TensorFormat::kGgmlQ3_K, internal::DecodeGgmlQ3_K, Q8Codes::kNone},
    {TensorFormat::kGgmlQ4_K, internal::DecodeGgmlQ4_K, Q8Codes::kNone},
    {TensorFormat::kGgmlQ5_K, internal::DecodeGgmlQ5_K, Q8Codes::kNone},
    {TensorFormat::kGgmlQ6_K, internal::DecodeGgmlQ6_K, Q8Codes::kNone},
    {TensorFormat::kVq3rB32, internal::DecodeVq3rB32, Q8Codes::kNone},
    {TensorFormat::kF8E4M3B32, internal::DecodeF8E4M3<kFp8Block32>, Q8Codes::kNone},
};

static_assert(OneRowPerFormatInOrder(kFormatKernels), "kFormatKernels: one row per TensorFormat");

// The row of `format`. REQUIRES: a valid enumerator.
constexpr const FormatKernels& KernelsOf(TensorFormat format) {
  return kFormatKernels[static_cast<size_t>(format)];
}

}  // namespace warp::kernels
