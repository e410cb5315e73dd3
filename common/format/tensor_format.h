#pragma once

// Storage formats of the tensors in trunk.bin and in expert records: one row
// of kFormatTraits each, and the byte arithmetic derived from it. The bytes
// themselves are described in docs/FORMAT.md#tensor-formats; kernels interpret them.
//
// Thread-safe: constants and pure functions.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
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
  kF8E4M3B32,  // FP8 E4M3 codes + f32 scale per 32x32 tile (DeepSeek V4.1 `X.scale`)
};

// Elements per scale block along a row for kQ8B32 / kQ4B32 / kMxfp4B32 / kVq3rB32.
inline constexpr uint64_t kRowBlock = 32;
// Square tile edges of the FP8 formats' scales: kF8E4M3B128 as the DeepSeek V3 /
// Kimi K2 / V4 releases ship them, kF8E4M3B32 as DeepSeek V4.1 Flash does.
inline constexpr uint64_t kFp8Block128 = 128;
inline constexpr uint64_t kFp8Block32 = 32;

// How one value of a separate scale sub-tensor is stored.
enum class ScaleType {
  kNone,  // no scale sub-tensor (plain floats; the ggml blocks hold theirs inside)
  kF16,   // IEEE binary16
  kE8M0,  // OCP MX E8M0, one byte: 2^(s - 127)
  kF32,   // IEEE binary32
};

constexpr uint64_t ScaleTypeBytes(ScaleType type) {
  switch (type) {
    case ScaleType::kNone:
      return 0;
    case ScaleType::kF16:
      return 2;
    case ScaleType::kE8M0:
      return 1;
    case ScaleType::kF32:
      return 4;
  }
  return 0;
}

// The scale sub-tensor: one value per block of `rows` x `cols` elements,
// row-major [ceil(rows / block rows), ceil(cols / block cols)].
struct ScaleBlock {
  ScaleType type = ScaleType::kNone;
  uint64_t rows = 0, cols = 0;
};

// What one tensor format is: the one place that says it. Everything
// that asks a question of a format (byte sizes, shape rules, which tool writes
// it) reads this row; the kernels' per-format code has its own table
// (common/kernels/format_kernels.h), and so do the encoders
// (computed/convert/encode.cc) and synth's fills (computed/synth/random_fill.cc).
// A new format is a new enumerator, one row here and a row in each of those.
struct FormatTraits {
  TensorFormat format;
  std::string_view name;  // in manifest.json and on the command line
  // The data sub-tensor is whole blocks of `block_elements` consecutive
  // elements of a row, `block_bytes` bytes each: a row's columns are a
  // multiple of block_elements. 1 for the element formats.
  uint64_t block_elements, block_bytes;
  ScaleBlock scale;     // the separate scale sub-tensor, if any
  bool ggml_block;      // ggml's blocks, as GGUF files store them: scale and codes together
  bool needs_codebook;  // values need codebooks.bin besides the bytes
  bool encodable;       // EncodeRows (computed/convert/encode.h) writes it from floats
};

// The scale layouts the formats use.
inline constexpr ScaleBlock kNoScale{};
inline constexpr ScaleBlock kRowScaleF16{ScaleType::kF16, 1, kRowBlock};
inline constexpr ScaleBlock kRowScaleE8M0{ScaleType::kE8M0, 1, kRowBlock};
inline constexpr ScaleBlock kTileScaleF32B128{ScaleType::kF32, kFp8Block128, kFp8Block128};
inline constexpr ScaleBlock kTileScaleF32B32{ScaleType::kF32, kFp8Block32, kFp8Block32};

// One row per TensorFormat, in the enum's order.
inline constexpr FormatTraits kFormatTraits[] = {
    // format, name, block elements and bytes, scale, ggml_block, needs_codebook, encodable
    {TensorFormat::kF32, "f32", 1, 4, kNoScale, false, false, true},
    {TensorFormat::kF16, "f16", 1, 2, kNoScale, false, false, true},
    {TensorFormat::kBF16, "bf16", 1, 2, kNoScale, false, false, true},
    {TensorFormat::kF8E4M3B128, "f8_e4m3_b128", 1, 1, kTileScaleF32B128, false, false, false},
    {TensorFormat::kQ8B32, "q8_b32", 32, 32, kRowScaleF16, false, false, true},
    {TensorFormat::kQ4B32, "q4_b32", 32, 16, kRowScaleF16, false, false, true},
    {TensorFormat::kMxfp4B32, "mxfp4_b32", 32, 16, kRowScaleE8M0, false, false, false},
    {TensorFormat::kGgmlQ8_0, "ggml_q8_0", 32, 34, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ4_0, "ggml_q4_0", 32, 18, kNoScale, true, false, false},
    {TensorFormat::kGgmlMxfp4, "ggml_mxfp4", 32, 17, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ4_1, "ggml_q4_1", 32, 20, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ5_0, "ggml_q5_0", 32, 22, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ5_1, "ggml_q5_1", 32, 24, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ2_K, "ggml_q2_k", 256, 84, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ3_K, "ggml_q3_k", 256, 110, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ4_K, "ggml_q4_k", 256, 144, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ5_K, "ggml_q5_k", 256, 176, kNoScale, true, false, false},
    {TensorFormat::kGgmlQ6_K, "ggml_q6_k", 256, 210, kNoScale, true, false, false},
    // 8 codes of 12 bits a block: 12 bytes (two codes per 3 bytes).
    {TensorFormat::kVq3rB32, "vq3r_b32", 32, 12, kRowScaleF16, false, true, false},
    {TensorFormat::kF8E4M3B32, "f8_e4m3_b32", 1, 1, kTileScaleF32B32, false, false, false},
};

// The number of formats. The enum's last enumerator is named here: a new one
// goes at the end of the enum, and here.
inline constexpr size_t kNumTensorFormats = static_cast<size_t>(TensorFormat::kF8E4M3B32) + 1;

// Whether a per-format table (this one, the kernels') has one row per
// TensorFormat in the enum's order, so that it can be indexed by the enum.
template <class Row, size_t kRows>
constexpr bool OneRowPerFormatInOrder(const Row (&rows)[kRows]) {
  if (kRows != kNumTensorFormats) return false;
  for (size_t i = 0; i < kRows; ++i) {
    if (static_cast<size_t>(rows[i].format) != i) return false;
  }
  return true;
}
static_assert(OneRowPerFormatInOrder(kFormatTraits), "kFormatTraits: one row per TensorFormat");

// The row of `format`. REQUIRES: a valid enumerator.
constexpr const FormatTraits& TraitsOf(TensorFormat format) {
  return kFormatTraits[static_cast<size_t>(format)];
}

// Calls fn.template operator()<F>() with F = `format` as a compile-time
// constant, for code templated on the format (the SIMD row decoders, the fill
// loops): the one dispatch from a format value to such code. fn is
// instantiated for every format; the call is one indirect call through a
// table built from kFormatTraits, so it belongs outside any per-element loop.
template <class Fn>
decltype(auto) VisitFormat(TensorFormat format, Fn&& fn) {
  using Result = decltype(fn.template operator()<TensorFormat::kF32>());
  return [&]<size_t... kIndex>(std::index_sequence<kIndex...>)->Result {
    using Thunk = Result (*)(Fn&);
    static constexpr Thunk kThunks[] = {
        [](Fn& f) -> Result { return f.template operator()<kFormatTraits[kIndex].format>(); }...};
    return kThunks[static_cast<size_t>(format)](fn);
  }
  (std::make_index_sequence<kNumTensorFormats>{});
}

std::string_view TensorFormatName(TensorFormat format);
std::optional<TensorFormat> ParseTensorFormat(std::string_view name);

// Elements and bytes of one block of a ggml block format; nullopt for the others.
struct GgmlBlockLayout {
  uint64_t elements, bytes;
};
constexpr std::optional<GgmlBlockLayout> GgmlBlockLayoutOf(TensorFormat format) {
  const FormatTraits& traits = TraitsOf(format);
  if (!traits.ggml_block) return std::nullopt;
  return GgmlBlockLayout{traits.block_elements, traits.block_bytes};
}

// True if the format carries a separate scale sub-tensor.
constexpr bool HasScale(TensorFormat format) {
  return TraitsOf(format).scale.type != ScaleType::kNone;
}
// The FP8 E4M3 formats, one per tile edge of their f32 scales: what a
// release's F8_E4M3 tensor is kept as, by the grid of its block scales.
inline constexpr TensorFormat kTiledFp8Formats[] = {TensorFormat::kF8E4M3B128,
                                                    TensorFormat::kF8E4M3B32};
constexpr bool IsTiledFp8(TensorFormat format) {
  for (TensorFormat fp8 : kTiledFp8Formats) {
    if (fp8 == format) return true;
  }
  return false;
}
// The FP8 format whose scales are one per `edge` x `edge` tile, if any.
constexpr std::optional<TensorFormat> TiledFp8Format(uint64_t edge) {
  for (TensorFormat fp8 : kTiledFp8Formats) {
    if (TraitsOf(fp8).scale.rows == edge) return fp8;
  }
  return std::nullopt;
}
static_assert(TiledFp8Format(kFp8Block32) == TensorFormat::kF8E4M3B32 &&
              TiledFp8Format(kFp8Block128) == TensorFormat::kF8E4M3B128);

// True if the format's values need a codebook (codebooks.bin) besides its bytes.
constexpr bool NeedsCodebook(TensorFormat format) { return TraitsOf(format).needs_codebook; }

// Why `shape` cannot be stored as `format`, or "" if it can. Formats with a
// scale and the ggml formats need a 2-D shape; every format needs columns
// divisible by its block's elements (32 for the row-block formats, 32 or 256
// for the ggml ones).
std::string ShapeProblem(TensorFormat format, const std::vector<uint64_t>& shape);

// Bytes of the data sub-tensor. REQUIRES: ShapeProblem(format, shape) == "".
uint64_t DataBytes(TensorFormat format, const std::vector<uint64_t>& shape);
// Bytes of the scale sub-tensor (0 if !HasScale). Same REQUIRES.
uint64_t ScaleBytes(TensorFormat format, const std::vector<uint64_t>& shape);

uint64_t NumElements(const std::vector<uint64_t>& shape);

}  // namespace warp
