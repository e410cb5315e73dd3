#include "common/kernels/format_kernels.h"

#include <array>
#include <bit>
#include <cstring>

#include "common/check.h"
#include "common/numeric/half.h"

namespace warp::kernels {
namespace {

constexpr float E4M3Value(uint8_t code) {
  const uint32_t sign = uint32_t{code & 0x80u} << 24;
  const uint32_t exp = (code >> 3) & 0xfu;
  const uint32_t mant = code & 0x7u;
  if (exp == 0xf && mant == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exp == 0) {  // subnormal: mant * 2^-9
    const float magnitude = static_cast<float>(mant) * 0x1p-9f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exp + 120) << 23) | (mant << 20));
}

constexpr std::array<float, 256> MakeE4M3Table() {
  std::array<float, 256> table{};
  for (int code = 0; code < 256; ++code) table[code] = E4M3Value(static_cast<uint8_t>(code));
  return table;
}

constexpr std::array<float, 256> kE4M3 = MakeE4M3Table();
static_assert(kE4M3[0x38] == 1.0f && kE4M3[0x7e] == 448.0f && kE4M3[0x01] == 0x1p-9f);

uint16_t Load16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float LoadF32(const std::byte* p) {
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Element `index` of a 4-bit data sub-tensor: low nibble first.
int Nibble(const std::byte* data, uint64_t index) {
  const auto byte = static_cast<uint8_t>(data[index / 2]);
  return index % 2 == 0 ? byte & 0xf : byte >> 4;
}

// ggml_q4_0 / ggml_mxfp4: element j of a 32-block is the low nibble of byte j
// for j < 16, the high nibble of byte j - 16 after.
int SplitNibble(const std::byte* codes, uint64_t j) {
  const auto byte = static_cast<uint8_t>(codes[j % 16]);
  return j < 16 ? byte & 0xf : byte >> 4;
}

uint8_t Byte(const std::byte* p, uint64_t i) { return static_cast<uint8_t>(p[i]); }

// ggml_q5_0 / ggml_q5_1: element j's 5-bit code, bit 4 from bit j of qh.
int Q5Code(const std::byte* qh, const std::byte* qs, uint64_t j) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  return SplitNibble(qs, j) | static_cast<int>((bits >> j) & 1) << 4;
}

// The ggml block of `w` holding column `col` of row `row`, with its traits row's
// layout: ggml's blocks are a row's columns in order, each block whole.
template <TensorFormat kFormat>
const std::byte* GgmlBlock(const MatrixView& w, uint64_t row, uint64_t col) {
  constexpr uint64_t kElements = TraitsOf(kFormat).block_elements;
  constexpr uint64_t kBytes = TraitsOf(kFormat).block_bytes;
  return w.data + (row * (w.cols / kElements) + col / kElements) * kBytes;
}

// f16 scale of the 32-block (kQ8B32, kQ4B32, kVq3rB32) holding element `first`
// of the data sub-tensor.
float RowBlockHalfScale(const MatrixView& w, uint64_t first) {
  return HalfToFloat(Load16(w.scale + 2 * (first / kRowBlock)));
}

// ggml_q4_k / ggml_q5_k: the 6-bit scale and min of sub-block `sub` (0-7) from
// the 12 bytes `q`, as ggml-quants.c get_scale_min_k4 unpacks them.
void Q4KScaleMin(const std::byte* q, uint64_t sub, int& scale, int& min) {
  if (sub < 4) {
    scale = Byte(q, sub) & 63;
    min = Byte(q, sub + 4) & 63;
  } else {
    scale = (Byte(q, sub + 4) & 0xf) | (Byte(q, sub - 4) >> 6) << 4;
    min = (Byte(q, sub + 4) >> 4) | (Byte(q, sub) >> 6) << 4;
  }
}

// ggml_q3_k: the scale of sub-block `sub` (0-15) from the 12 bytes `q`: low 4
// bits from byte sub % 8 (its low nibble for sub < 8), high 2 bits from byte
// 8 + sub % 4 (bits 2 * (sub / 4)), less 32 (dequantize_row_q3_K's aux words).
int Q3KScale(const std::byte* q, uint64_t sub) {
  const int low = (Byte(q, sub % 8) >> (4 * (sub / 8))) & 0xf;
  const int high = (Byte(q, 8 + sub % 4) >> (2 * (sub / 4))) & 3;
  return (low | high << 4) - 32;
}

// ggml_q4_k / ggml_q5_k (kQ5: qh[32] before the nibbles): d, dmin, scales[12],
// (qh[32],) qs[128].
template <bool kQ5>
void DecodeQ4KOrQ5K(const std::byte* b, uint64_t j0, uint64_t n, float* out) {
  const float d = HalfToFloat(Load16(b)), dmin = HalfToFloat(Load16(b + 2));
  const uint64_t sub = j0 / 32;
  int sc, m;
  Q4KScaleMin(b + 4, sub, sc, m);
  const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
  const std::byte* qs = b + (kQ5 ? 48 : 16) + 32 * (sub / 2);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t t = (j0 + i) % 32;
    int q = (Byte(qs, t) >> (4 * (sub % 2))) & 0xf;  // even sub-blocks low nibbles
    if (kQ5 && (Byte(b + 16, t) >> sub) & 1) q += 16;
    out[i] = d1 * static_cast<float>(q) - m1;
  }
}

}  // namespace

float E4M3ToFloat(uint8_t code) { return kE4M3[code]; }

namespace internal {

// The scalar decoders of the formats, as matrix_view.h defines their values.
// Column `col` of row `row` is element first = row * cols + col of the data.
// The ggml formats' are ggml-quants.c's dequantize_row_* (code * d, then + m:
// two roundings, never an fma; this library is built -ffp-contract=off); the
// k-quants' take one 16-element sub-block: for element j, h = j / 128 and
// r = j % 128 (q2_K, q3_K, q6_K: halves of 128 elements), t = j % 32, and its
// sub-block's scale is that of j / 16 (or j / 32).

void DecodeF32(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  for (uint64_t i = 0; i < n; ++i) out[i] = LoadF32(w.data + 4 * (first + i));
}

void DecodeF16(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  for (uint64_t i = 0; i < n; ++i) out[i] = HalfToFloat(Load16(w.data + 2 * (first + i)));
}

void DecodeBf16(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  for (uint64_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(Load16(w.data + 2 * (first + i)));
}

template <uint64_t kTile>
void DecodeF8E4M3(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  const uint64_t tiles_per_row = (w.cols + kTile - 1) / kTile;
  const float scale = LoadF32(w.scale + 4 * ((row / kTile) * tiles_per_row + col / kTile));
  for (uint64_t i = 0; i < n; ++i) out[i] = kE4M3[static_cast<uint8_t>(w.data[first + i])] * scale;
}
template void DecodeF8E4M3<kFp8Block128>(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);
template void DecodeF8E4M3<kFp8Block32>(const MatrixView&, uint64_t, uint64_t, uint64_t, float*);

void DecodeQ8B32(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  const float scale = RowBlockHalfScale(w, first);
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(static_cast<int8_t>(w.data[first + i])) * scale;
  }
}

void DecodeQ4B32(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  const float scale = RowBlockHalfScale(w, first);
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(Nibble(w.data, first + i) - 8) * scale;
  }
}

void DecodeMxfp4B32(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  const float scale = kE8M0Scale[static_cast<uint8_t>(w.scale[first / kRowBlock])];
  for (uint64_t i = 0; i < n; ++i) out[i] = kFp4Value[Nibble(w.data, first + i)] * scale;
}

void DecodeVq3rB32(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;
  const float scale = RowBlockHalfScale(w, first);
  constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kVq3rB32);
  const std::byte* codes = w.data + row * (w.cols / kTraits.block_elements * kTraits.block_bytes);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t element = col + i;
    const uint32_t code = Vq3rCode(codes, element / kVq3rDim);
    const uint32_t k = element % kVq3rDim;
    out[i] =
        (w.codebook->Centroid(0, code & 63, k) + w.codebook->Centroid(1, code >> 6, k)) * scale;
  }
}

void DecodeGgmlQ8_0(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* block = GgmlBlock<TensorFormat::kGgmlQ8_0>(w, row, col);
  const uint64_t j0 = col % 32;
  const float scale = HalfToFloat(Load16(block));
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(static_cast<int8_t>(block[2 + j0 + i])) * scale;
  }
}

void DecodeGgmlQ4_0(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* block = GgmlBlock<TensorFormat::kGgmlQ4_0>(w, row, col);
  const uint64_t j0 = col % 32;
  const float scale = HalfToFloat(Load16(block));
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = static_cast<float>(SplitNibble(block + 2, j0 + i) - 8) * scale;
  }
}

void DecodeGgmlMxfp4(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* block = GgmlBlock<TensorFormat::kGgmlMxfp4>(w, row, col);
  const uint64_t j0 = col % 32;
  const float scale = kE8M0HalfScale[static_cast<uint8_t>(block[0])];
  for (uint64_t i = 0; i < n; ++i) {
    out[i] = kGgmlMxfp4Value[SplitNibble(block + 1, j0 + i)] * scale;
  }
}

void DecodeGgmlQ4_1(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* b = GgmlBlock<TensorFormat::kGgmlQ4_1>(w, row, col);
  const float d = HalfToFloat(Load16(b));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = col % 32 + i;
    out[i] = static_cast<float>(SplitNibble(b + 4, j)) * d + HalfToFloat(Load16(b + 2));
  }
}

void DecodeGgmlQ5_0(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* b = GgmlBlock<TensorFormat::kGgmlQ5_0>(w, row, col);
  const float d = HalfToFloat(Load16(b));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = col % 32 + i;
    out[i] = static_cast<float>(Q5Code(b + 2, b + 6, j) - 16) * d;
  }
}

void DecodeGgmlQ5_1(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* b = GgmlBlock<TensorFormat::kGgmlQ5_1>(w, row, col);
  const float d = HalfToFloat(Load16(b));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = col % 32 + i;
    out[i] = static_cast<float>(Q5Code(b + 4, b + 8, j)) * d + HalfToFloat(Load16(b + 2));
  }
}

void DecodeGgmlQ2_K(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* b =
      GgmlBlock<TensorFormat::kGgmlQ2_K>(w, row, col);  // scales[16], qs[64], d, dmin
  const uint64_t j0 = col % 256;
  WARP_DCHECK(j0 % 16 + n <= 16);
  const float d = HalfToFloat(Load16(b + 80)), dmin = HalfToFloat(Load16(b + 82));
  const uint8_t sc = Byte(b, j0 / 16);
  const float dl = d * static_cast<float>(sc & 0xf), ml = dmin * static_cast<float>(sc >> 4);
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = j0 + i, h = j / 128, shift = 2 * (j % 128 / 32);
    const int q = (Byte(b + 16, 32 * h + j % 32) >> shift) & 3;
    out[i] = dl * static_cast<float>(q) - ml;
  }
}

void DecodeGgmlQ3_K(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* b =
      GgmlBlock<TensorFormat::kGgmlQ3_K>(w, row, col);  // hmask[32], qs[64], scales[12], d
  const uint64_t j0 = col % 256;
  WARP_DCHECK(j0 % 16 + n <= 16);
  const float dl = HalfToFloat(Load16(b + 108)) * static_cast<float>(Q3KScale(b + 96, j0 / 16));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = j0 + i, h = j / 128, k = j % 128 / 32;
    const int low = (Byte(b + 32, 32 * h + j % 32) >> (2 * k)) & 3;
    const bool high = (Byte(b, j % 32) >> (4 * h + k)) & 1;
    out[i] = dl * static_cast<float>(low - (high ? 0 : 4));
  }
}

void DecodeGgmlQ4_K(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  WARP_DCHECK(col % 16 + n <= 16);
  DecodeQ4KOrQ5K<false>(GgmlBlock<TensorFormat::kGgmlQ4_K>(w, row, col), col % 256, n, out);
}

void DecodeGgmlQ5_K(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  WARP_DCHECK(col % 16 + n <= 16);
  DecodeQ4KOrQ5K<true>(GgmlBlock<TensorFormat::kGgmlQ5_K>(w, row, col), col % 256, n, out);
}

void DecodeGgmlQ6_K(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const std::byte* b =
      GgmlBlock<TensorFormat::kGgmlQ6_K>(w, row, col);  // ql[128], qh[64], int8 scales[16], d
  const uint64_t j0 = col % 256;
  WARP_DCHECK(j0 % 16 + n <= 16);
  const float d = HalfToFloat(Load16(b + 208));
  const float scale = d * static_cast<float>(static_cast<int8_t>(b[192 + j0 / 16]));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = j0 + i, h = j / 128, k = j % 128 / 32, t = j % 32;
    const int low = (Byte(b, 64 * h + 32 * (k % 2) + t) >> (4 * (k / 2))) & 0xf;
    const int high = (Byte(b + 128, 32 * h + t) >> (2 * k)) & 3;
    out[i] = scale * static_cast<float>((low | high << 4) - 32);
  }
}

}  // namespace internal
}  // namespace warp::kernels
