#pragma once

// MatrixView: a read-only view of one stored matrix in any TensorFormat, and the
// scalar dequantization that defines what its bytes mean. Owns no bytes: they
// belong to the caller (a trunk mapping or an expert record). Byte layouts:
// docs/FORMAT.md#tensor-formats.
//
// Thread-safe: plain values over immutable bytes; the functions are pure.

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/format/tensor_format.h"

namespace warp::computed::kernels {

// [rows, cols], row-major. For kQ8B32 / kQ4B32 cols is a multiple of 32 (ShapeProblem).
struct MatrixView {
  TensorFormat format = TensorFormat::kF32;
  uint64_t rows = 0, cols = 0;
  const std::byte* data = nullptr;   // DataBytes(format, {rows, cols}) bytes
  const std::byte* scale = nullptr;  // ScaleBytes(...) bytes, or nullptr for f32/f16/bf16
};

// Row `row` of `w` as float32, `w.cols` values, exactly:
//   f32: as stored;  f16, bf16: exact widening;
//   f8_e4m3_b128: E4M3ToFloat(code) * f32 scale of its 128x128 block (one multiply);
//   q8_b32: float(int8 code) * float(f16 scale of its 32-block) (one multiply);
//   q4_b32: float(nibble - 8) * float(f16 scale of its 32-block) (one multiply).
// The SIMD kernels dequantize to these same bits. REQUIRES: row < w.rows,
// out.size() >= w.cols.
void DequantizeRow(const MatrixView& w, uint64_t row, std::span<float> out);

// The exact value of an OCP FP8 E4M3 code: bias 7, subnormals, no infinities;
// 0x7f and 0xff are NaN (returned as a quiet NaN with the code's sign, 0x7fc00000).
float E4M3ToFloat(uint8_t code);

}  // namespace warp::computed::kernels
