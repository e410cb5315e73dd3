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
};

// Elements per scale block along a row for kQ8B32 / kQ4B32 / kMxfp4B32.
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

// Why `shape` cannot be stored as `format`, or "" if it can. Block formats need
// a 2-D shape; row-block formats need columns divisible by 32.
std::string ShapeProblem(TensorFormat format, const std::vector<uint64_t>& shape);

// Bytes of the data sub-tensor. REQUIRES: ShapeProblem(format, shape) == "".
uint64_t DataBytes(TensorFormat format, const std::vector<uint64_t>& shape);
// Bytes of the scale sub-tensor (0 if !HasScale). Same REQUIRES.
uint64_t ScaleBytes(TensorFormat format, const std::vector<uint64_t>& shape);

uint64_t NumElements(const std::vector<uint64_t>& shape);

}  // namespace warp
