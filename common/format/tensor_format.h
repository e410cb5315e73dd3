#pragma once

// Storage formats of the tensors in trunk.bin and in expert records, and the
// byte arithmetic for each. The bytes themselves are described in
// docs/FORMAT.md#tensor-formats; kernels interpret them.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace warp {

enum class TensorFormat {
  kF32,         // IEEE binary32, little-endian
  kF16,         // IEEE binary16
  kBF16,        // bfloat16 (upper half of a binary32)
  kF8E4M3B128,  // FP8 E4M3 codes + f32 scale per 128x128 block (DeepSeek `weight_scale_inv`)
  kQ8B32,       // int8 codes + f16 scale per 32 consecutive elements of a row
  kQ4B32,       // int4 codes (two per byte, low nibble first, value = nibble - 8)
                // + f16 scale per 32 consecutive elements of a row
  kMxfp4B32,    // OCP MX FP4: E2M1 codes packed as kQ4B32 + E8M0 scale (2^(s-127)) per
                // 32 consecutive elements of a row (gpt-oss `*_blocks` / `*_scales`)
  // ggml's block formats, kept as GGUF files store them: each row is whole
  // blocks, each block its scale and codes together (ggml-common.h).
  kGgmlQ8_0,   // block_q8_0: f16 d, 32 int8 codes; value = code * d
  kGgmlQ4_0,   // block_q4_0: f16 d, 16 bytes; element j (< 16) in the low nibble of
               // byte j, element j + 16 in its high nibble; value = (nibble - 8) * d
  kGgmlMxfp4,  // block_mxfp4: E8M0 e, 16 bytes of E2M1 codes ordered as kGgmlQ4_0;
               // value = 2 * E2M1(nibble) * 2^(e - 128)
  kGgmlQ4_1,   // block_q4_1: f16 d, f16 m, 16 bytes as kGgmlQ4_0; value = nibble * d + m
  kGgmlQ5_0,   // block_q5_0: f16 d, 4 bytes qh (bit j: element j's bit 4), 16 bytes
               // of low nibbles as kGgmlQ4_0; value = (q - 16) * d
  kGgmlQ5_1,   // block_q5_1: f16 d, f16 m, then as kGgmlQ5_0; value = q * d + m
  // ggml's k-quants: super-blocks of 256 elements (QK_K) with sub-block scales
  // of 6 or 8 bits; the byte orders are in matrix_view.h and docs/FORMAT.md.
  kGgmlQ2_K,  // block_q2_K: 16 bytes of 4-bit scale | 4-bit min, 64 bytes of 2-bit
              // codes, f16 d, f16 dmin (84 bytes)
  kGgmlQ3_K,  // block_q3_K: 32 bytes of high bits, 64 bytes of 2-bit codes, 12 bytes
              // of 6-bit scales, f16 d (110 bytes)
  kGgmlQ4_K,  // block_q4_K: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
              // 128 bytes of nibbles (144 bytes)
  kGgmlQ5_K,  // block_q5_K: as kGgmlQ4_K plus 32 bytes of high bits before the
              // nibbles (176 bytes)
  kGgmlQ6_K,  // block_q6_K: 128 bytes of low nibbles, 64 bytes of 2-bit highs,
              // 16 int8 scales, f16 d (210 bytes)
  kVq3rB32,   // 3-bit residual vector quantization: each 4 consecutive elements of a
              // row one 12-bit code (two 64-entry stages of its layer's codebook,
              // codebooks.bin), two codes per 3 bytes, + f16 scale per 32 elements
};

// Elements per scale block along a row for kQ8B32 / kQ4B32 / kMxfp4B32 / kVq3rB32.
inline constexpr uint64_t kRowBlock = 32;
// Square block edge of kF8E4M3B128 scales, as the DeepSeek V3 / Kimi K2 releases ship.
inline constexpr uint64_t kFp8Block = 128;

std::string_view TensorFormatName(TensorFormat format);
std::optional<TensorFormat> ParseTensorFormat(std::string_view name);

// Elements and bytes of one block of a ggml block format; nullopt for the others.
struct GgmlBlockLayout {
  uint64_t elements, bytes;
};
std::optional<GgmlBlockLayout> GgmlBlockLayoutOf(TensorFormat format);

// True if the format carries a separate scale sub-tensor.
bool HasScale(TensorFormat format);
// True if the format's values need a codebook (codebooks.bin) besides its bytes.
bool NeedsCodebook(TensorFormat format);

// Why `shape` cannot be stored as `format`, or "" if it can. Block formats need
// a 2-D shape; row-block formats need columns divisible by 32, the ggml formats
// by their block's elements (32, or 256 for the k-quants).
std::string ShapeProblem(TensorFormat format, const std::vector<uint64_t>& shape);

// Bytes of the data sub-tensor. REQUIRES: ShapeProblem(format, shape) == "".
uint64_t DataBytes(TensorFormat format, const std::vector<uint64_t>& shape);
// Bytes of the scale sub-tensor (0 if !HasScale). Same REQUIRES.
uint64_t ScaleBytes(TensorFormat format, const std::vector<uint64_t>& shape);

uint64_t NumElements(const std::vector<uint64_t>& shape);

}  // namespace warp
