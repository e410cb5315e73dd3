#pragma once

// MatMulRowsQ8: y = W x with the activations x quantized to 8-bit integers per
// 32-column block and the dot products done in integers, 8 columns at a time
// (AVX-512 VNNI vpdpbusd, or AVX2 vpmaddubsw), for 4-bit weights (q4_b32,
// ggml_q4_0, mxfp4_b32, ggml_mxfp4). The quantization is llama.cpp's Q8_0 with
// an f32 scale (llama.cpp then sums a block as one integer; here each 8 columns
// are one). It rounds the activations a second time, so it is opt-in (`computed
// --activations q8`), never the default. What it buys: the f32 kernels of
// matmul.h decode each nibble to a float, and that decode, not memory, bounds
// 4-bit weights in RAM.
//
// Thread-safe: QuantizeActivations writes only its output; MatMulRowsQ8 is pure.
//
// Activations (QuantizeActivations), per token and 32-column block b:
//   amax = max |x|; d[b] = amax / 127; q = nearbyint(x * (127 / amax)) (ties to
//   even), an int8 in [-127, 127]; all q are 0 when amax < 127 / FLT_MAX (so
//   when amax is 0). A block with a NaN or an infinity has q = 0 and d[b] =
//   NaN, so its outputs are NaN.
// Weights: each nibble an integer code c and each block a float scale dw[b]
// (NibbleCode, BlockScale below):
//   q4_b32, ggml_q4_0: c = nibble - 8, dw = the block's f16 scale;
//   mxfp4_b32, ggml_mxfp4: c = twice the nibble's E2M1 value (ggml's
//     kvalues_mxfp4, in [-12, 12]) and dw = half the E8M0 scale, 2^(e - 128),
//     exact down to e = 0; e = 255 is NaN in mxfp4_b32 and 2^127 in ggml_mxfp4,
//     as their f32 decodes (matrix_view.h) have it.
//
// Summation order (every ISA gives the same bits; tests use memcmp). Blocks go
// in groups of 4 (128 columns); lane l in [0, 16) of group g holds block
// b = 4g + l / 4 and, of that block's 16 nibble bytes, bytes 4 (l % 4) .. +3,
// both nibbles of each: 8 columns.
//   1. 16 float32 accumulators acc[0..15], all +0.0f.
//   2. For g = 0, 1, ... in increasing order, for each lane l whose block exists:
//        p = sum of c * q over the lane's 8 columns    (exact, an int32)
//        acc[l] = fma(dw[b] * d[b], float(p), acc[l])  (dw * d rounded once)
//      A lane whose block is past the last column is left as it was.
//   3. The tree of matmul.h: s[i] = acc[i] + acc[i + 8]; s[i] += s[i + 4];
//      s[i] += s[i + 2]; y = s[0] + s[1].
// So a batch of n tokens equals n single-token calls, for any row split.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/format_kernels.h"
#include "common/kernels/matrix_view.h"

namespace warp::kernels {

// The columns of one group of 4 blocks, as the kernels read them.
inline constexpr uint64_t kQ8GroupCols = 128;
inline constexpr uint64_t kQ8GroupLanes = 16;

// Whether MatMulRowsQ8 takes weights of `format` (its row of kFormatKernels).
constexpr bool HasQ8Path(TensorFormat format) { return KernelsOf(format).q8 != Q8Codes::kNone; }

// Whether the 4-bit codes of `format` are E2M1 (mxfp4_b32, ggml_mxfp4), not
// integers (q4_b32, ggml_q4_0).
constexpr bool IsFp4(TensorFormat format) { return KernelsOf(format).q8 == Q8Codes::kE2M1; }

// The offset that makes every code c of `format` an unsigned byte, c + offset
// (8 for the q4 formats, 12 for the mxfp4 ones): the SIMD kernels multiply
// unsigned weights by signed activations. REQUIRES: HasQ8Path(format).
constexpr int32_t CodeOffset(TensorFormat format) { return IsFp4(format) ? 12 : 8; }

// Activations of num_tokens tokens of `cols` columns, quantized for weights of
// one format. Per token and group g, `low` and `high` are 64 int8 each: the
// activation of the column under the low (high) nibble of byte j of the
// group's block s at index 16 s + j (ggml_q4_0, ggml_mxfp4: columns j and
// 16 + j of the block; q4_b32, mxfp4_b32: 2j and 2j + 1), zero past the last
// block. `bias` is -CodeOffset(format) times the sum of a lane's 8 codes (the
// weights' offset, folded in so that the integer dot runs on unsigned bytes),
// and `lane_scale` the block's d of each lane, 0 past the last block.
struct Q8Activations {
  TensorFormat format = TensorFormat::kGgmlQ4_0;
  uint64_t cols = 0, groups = 0;
  size_t num_tokens = 0;
  std::vector<int8_t> codes;      // [token][group][low 64, high 64]
  std::vector<int32_t> bias;      // [token][group][16]
  std::vector<float> lane_scale;  // [token][group][16]
  std::vector<float> source;      // the x these were quantized from

  const int8_t* Codes(size_t token, uint64_t group) const {
    return codes.data() + (token * groups + group) * 2 * 64;
  }
  const int32_t* Bias(size_t token, uint64_t group) const {
    return bias.data() + (token * groups + group) * kQ8GroupLanes;
  }
  const float* LaneScale(size_t token, uint64_t group) const {
    return lane_scale.data() + (token * groups + group) * kQ8GroupLanes;
  }
};

// x: [num_tokens][cols]. REQUIRES: HasQ8Path(format), cols % 32 == 0. Reuses
// out's storage (it only grows), so a caller that keeps one allocates once, and
// returns at once when out already holds these bytes of x for this format: an
// MoE layer's gate and up projections, and every expert of a decode token, take
// the same x (a compare of 28 KiB instead of ~22 us to quantize 7168 columns).
void QuantizeActivations(TensorFormat format, const float* x, size_t num_tokens, uint64_t cols,
                         Q8Activations* out);

// y[t * y_stride + r] for rows r in [row_begin, row_end) and every token of
// `x`, in the order above. REQUIRES: HasQ8Path(w.format), x quantized for
// w.format with x.cols == w.cols, row_begin <= row_end <= w.rows.
void MatMulRowsQ8(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
                  float* y, size_t y_stride);

// Which implementation MatMulRowsQ8 runs: "avx512_vnni", "avx2" or "scalar",
// from ActiveIsa() and the CPU's VNNI support.
const char* Q8KernelName();

namespace internal {
// The per-ISA implementations, with MatMulRowsQ8's contract. The SIMD ones
// REQUIRE the CPU features their names say.
void MatMulRowsQ8Scalar(const MatrixView& w, const Q8Activations& x, size_t row_begin,
                        size_t row_end, float* y, size_t y_stride);
void MatMulRowsQ8Avx2(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
                      float* y, size_t y_stride);
void MatMulRowsQ8Avx512Vnni(const MatrixView& w, const Q8Activations& x, size_t row_begin,
                            size_t row_end, float* y, size_t y_stride);
bool CpuHasAvx512Vnni();

// Where the weights of `format` keep a block's nibbles and scale: a ggml block
// is its scale, then its 16 nibble bytes; the others keep the nibbles in data
// and the scales in their own sub-tensor. (constexpr: the SIMD tiles take them
// as compile-time constants.)
constexpr bool ScaleInBlock(TensorFormat format) { return TraitsOf(format).ggml_block; }
constexpr uint64_t ScaleBytesOf(TensorFormat format) { return IsFp4(format) ? 1 : 2; }
constexpr uint64_t BlockBytesInData(TensorFormat format) {
  return ScaleInBlock(format) ? 16 + ScaleBytesOf(format) : 16;
}

// The weights of block b of row `row`: its 16 nibble bytes, and the bytes of its scale.
inline const std::byte* BlockNibbles(const MatrixView& w, uint64_t row, uint64_t block) {
  const uint64_t index = row * (w.cols / 32) + block, bytes = BlockBytesInData(w.format);
  return w.data + index * bytes + (bytes - 16);
}
inline const std::byte* BlockScaleBytes(const MatrixView& w, uint64_t row, uint64_t block) {
  const uint64_t index = row * (w.cols / 32) + block;
  return ScaleInBlock(w.format) ? w.data + index * BlockBytesInData(w.format)
                                : w.scale + index * ScaleBytesOf(w.format);
}

// dw of the header's order from a block's scale bytes.
float BlockScale(TensorFormat format, const std::byte* scale);
// The header's c of a nibble.
inline int32_t NibbleCode(TensorFormat format, uint8_t nibble) {
  if (!IsFp4(format)) return nibble - 8;
  return static_cast<int32_t>(kGgmlMxfp4Value[nibble]);
}
}  // namespace internal

}  // namespace warp::kernels
