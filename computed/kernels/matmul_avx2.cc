// The AVX2 kernels of MatMulRows (matmul.h). This file alone is compiled with
// -mavx2 -mfma -mf16c; matmul.cc calls it only when DetectIsa() says the CPU
// has all three.
//
// A pair of ymm registers (V16) holds the 16 accumulator lanes of one
// (row, token) output: lanes 0-7 in `lo`, 8-15 in `hi`, so lane L is acc[L] of
// the summation order in matmul.h. The loop nest is that of matmul_avx512.cc
// with half the registers: tiles of R rows x T tokens with R*T <= 4 (8 ymm
// accumulators).

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "computed/kernels/matmul.h"

namespace warp::computed::kernels::internal {
namespace {

constexpr uint64_t kLanes = 16;
constexpr uint64_t kWholeRow = uint64_t{1} << 60;  // Prepare() group for formats without one

struct V16 {
  __m256 lo, hi;
};

inline V16 Fma(V16 w, V16 x, V16 acc) {
  return {_mm256_fmadd_ps(w.lo, x.lo, acc.lo), _mm256_fmadd_ps(w.hi, x.hi, acc.hi)};
}

inline V16 Mul(V16 a, __m256 s) { return {_mm256_mul_ps(a.lo, s), _mm256_mul_ps(a.hi, s)}; }

// Step 3 of the summation order: the same tree as ReduceLanes in matmul.cc.
inline float Reduce(V16 acc) {
  const __m256 s8 = _mm256_add_ps(acc.lo, acc.hi);
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // lanes 0, 1: s4[i] + s4[i + 2]
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// kLaneMask[16 - n .. 32 - n) is -1 for the first n of 16 lanes, 0 after.
alignas(64) constexpr std::array<int32_t, 32> kLaneMask = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0};

struct TailMask {
  __m256i lo, hi;
  explicit TailMask(uint64_t n)
      : lo(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&kLaneMask[16 - n]))),
        hi(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&kLaneMask[24 - n]))) {}
};

// Row decoders, as in matmul_avx512.cc: kStep columns per Load() as kVecs V16s;
// Prepare(col, end, ahead) before the Loads of [col, end) (prefetching what it
// reads for the row `ahead` rows down); LoadTail(col, n) decodes the
// partial last n < 16 columns from a zero-padded copy (once per row, so the
// copy costs nothing that matters); `p` is the row's data and DataBytes(n) the
// bytes of n of its columns.

struct F32Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * 4; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const float* p;

  static V16 Decode(const float* q) { return {_mm256_loadu_ps(q), _mm256_loadu_ps(q + 8)}; }
  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const float*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, V16* out) const { out[0] = Decode(p + col); }
  V16 LoadTail(uint64_t col, uint64_t n) const {
    float padded[16] = {};
    std::memcpy(padded, p + col, n * sizeof(float));
    return Decode(padded);
  }
};

struct F16Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * 2; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint16_t* p;

  static V16 Decode(const uint16_t* q) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 8)))};
  }
  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint16_t*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, V16* out) const { out[0] = Decode(p + col); }
  V16 LoadTail(uint64_t col, uint64_t n) const {
    uint16_t padded[16] = {};
    std::memcpy(padded, p + col, n * sizeof(uint16_t));
    return Decode(padded);
  }
};

struct Bf16Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * 2; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint16_t* p;

  static __m256 Widen(const uint16_t* q) {
    const __m128i bf16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16), 16));
  }
  static V16 Decode(const uint16_t* q) { return {Widen(q), Widen(q + 8)}; }
  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint16_t*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, V16* out) const { out[0] = Decode(p + col); }
  V16 LoadTail(uint64_t col, uint64_t n) const {
    uint16_t padded[16] = {};
    std::memcpy(padded, p + col, n * sizeof(uint16_t));
    return Decode(padded);
  }
};

// E4M3 by moving bits and multiplying by 2^120; see F8Row in matmul_avx512.cc.
struct F8Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint8_t* p;
  const float* scales;  // the row's 128-row block of the scale grid

  static __m256 Decode8(__m128i codes, bool has_nan) {  // the low 8 bytes of `codes`
    const __m256i wide = _mm256_cvtepi8_epi32(codes);   // sign-extended: bits 31..7 = sign
    const __m256i bits =
        _mm256_and_si256(_mm256_slli_epi32(wide, 20), _mm256_set1_epi32(int32_t(0x87f00000)));
    const __m256 value = _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p120f));
    if (!has_nan) [[likely]] {
      return value;
    }
    const __m256i magnitude_7f = _mm256_set1_epi32(0x7f);
    const __m256i nan = _mm256_cmpeq_epi32(_mm256_and_si256(wide, magnitude_7f), magnitude_7f);
    const __m256i nan_bits =
        _mm256_or_si256(_mm256_and_si256(wide, _mm256_set1_epi32(int32_t(0x80000000))),
                        _mm256_set1_epi32(0x7fc00000));
    return _mm256_blendv_ps(value, _mm256_castsi256_ps(nan_bits), _mm256_castsi256_ps(nan));
  }
  static V16 Decode(const uint8_t* q, float scale) {
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    const __m128i magnitude_7f = _mm_set1_epi8(0x7f);
    const bool has_nan =
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(codes, magnitude_7f), magnitude_7f)) != 0;
    const V16 value = {Decode8(codes, has_nan), Decode8(_mm_unpackhi_epi64(codes, codes), has_nan)};
    return Mul(value, _mm256_set1_ps(scale));
  }
  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint8_t*>(w.data) + row * w.cols;
    const uint64_t blocks_per_row = (w.cols + kFp8Block - 1) / kFp8Block;
    scales = reinterpret_cast<const float*>(w.scale) + (row / kFp8Block) * blocks_per_row;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, V16* out) const { out[0] = Decode(p + col, scales[col / kFp8Block]); }
  V16 LoadTail(uint64_t col, uint64_t n) const {
    uint8_t padded[16] = {};
    std::memcpy(padded, p + col, n);
    return Decode(padded, scales[col / kFp8Block]);
  }
};

// Row-block formats: Prepare() converts the f16 scales of 8 blocks (256
// columns) at once, so each block's scale is then one broadcast load.
struct BlockScales {
  static constexpr uint64_t kGroup = 8 * kRowBlock;
  const uint16_t* f16;
  uint64_t row_blocks;
  alignas(32) float f32[8];

  void Init(const MatrixView& w, uint64_t row) {
    row_blocks = w.cols / kRowBlock;
    f16 = reinterpret_cast<const uint16_t*>(w.scale) + row * row_blocks;
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) {
    const uint64_t block = col / kRowBlock, count = (end - col) / kRowBlock;  // 1..8
    // The scales' own stream, prefetched as in matmul_avx512.cc.
    _mm_prefetch(reinterpret_cast<const char*>(f16 + block + ahead * row_blocks), _MM_HINT_T0);
    __m128i halves;
    if (count == 8) {
      halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f16 + block));
    } else {
      uint16_t padded[8] = {};
      std::memcpy(padded, f16 + block, count * sizeof(uint16_t));
      halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(padded));
    }
    _mm256_store_ps(f32, _mm256_cvtph_ps(halves));
  }
  __m256 Get(uint64_t col) const { return _mm256_set1_ps(f32[(col / kRowBlock) % 8]); }
};

inline __m256 Int8ToFloat(__m128i codes) {  // the low 8 bytes
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
}

struct Q8Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols; }
  static constexpr uint64_t kStep = kRowBlock, kGroup = BlockScales::kGroup;
  static constexpr int kVecs = 2;
  static constexpr bool kHasTail = false;
  const int8_t* p;
  BlockScales scale;

  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const int8_t*>(w.data) + row * w.cols;
    scale.Init(w, row);
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) { scale.Prepare(col, end, ahead); }
  void Load(uint64_t col, V16* out) const {
    const __m256 s = scale.Get(col);
    for (int v = 0; v < 2; ++v) {
      const int8_t* q = p + col + 16 * v;
      const V16 codes = {Int8ToFloat(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))),
                         Int8ToFloat(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8)))};
      out[v] = Mul(codes, s);
    }
  }
};

// q4: the block's 16 bytes are split into nibbles and re-interleaved in column
// order with byte ops (element 2i is the low nibble of byte i), made signed
// (nibble - 8), then widened and converted like q8.
struct Q4Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols / 2; }
  static constexpr uint64_t kStep = kRowBlock, kGroup = BlockScales::kGroup;
  static constexpr int kVecs = 2;
  static constexpr bool kHasTail = false;
  const std::byte* p;
  BlockScales scale;

  void Init(const MatrixView& w, uint64_t row) {
    p = w.data + row * (w.cols / 2);
    scale.Init(w, row);
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) { scale.Prepare(col, end, ahead); }
  void Load(uint64_t col, V16* out) const {
    const __m256 s = scale.Get(col);
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + col / 2));
    const __m128i low4 = _mm_set1_epi8(0x0f), eight = _mm_set1_epi8(8);
    const __m128i lo = _mm_and_si128(packed, low4);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
    const __m128i first = _mm_sub_epi8(_mm_unpacklo_epi8(lo, hi), eight);   // columns 0..15
    const __m128i second = _mm_sub_epi8(_mm_unpackhi_epi8(lo, hi), eight);  // columns 16..31
    out[0] = Mul({Int8ToFloat(first), Int8ToFloat(_mm_unpackhi_epi64(first, first))}, s);
    out[1] = Mul({Int8ToFloat(second), Int8ToFloat(_mm_unpackhi_epi64(second, second))}, s);
  }
};

inline V16 LoadX(const float* x) { return {_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)}; }

// Columns [col_begin, col_end) of R rows x T tokens, as TileColumns in
// matmul_avx512.cc: acc_io[i * T + j] carries row `row + i`, token j across
// column blocks; x points at the tile's first token.
template <class Row, int R, int T>
void TileColumns(const MatrixView& w, uint64_t row, const float* x, uint64_t col_begin,
                 uint64_t col_end, V16* acc_io) {
  const uint64_t cols = w.cols;
  Row rows[R];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) rows[i].Init(w, row + i);
  V16 acc[R][T];
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) acc[i][j] = acc_io[i * T + j];
  }
  const uint64_t next_tile = R * Row::DataBytes(cols);  // prefetch distance, as in AVX-512
  const uint64_t full = cols - cols % Row::kStep;
  const uint64_t full_end = std::min(col_end, full);
  for (uint64_t group = col_begin; group < full_end; group += Row::kGroup) {
    const uint64_t end = std::min(full_end, group + Row::kGroup);
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) rows[i].Prepare(group, end, R);
    for (uint64_t col = group; col < end; col += Row::kStep) {
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        if (Row::DataBytes(col) % 64 < Row::DataBytes(Row::kStep)) {  // once per cache line
          _mm_prefetch(reinterpret_cast<const char*>(rows[i].p) + Row::DataBytes(col) + next_tile,
                       _MM_HINT_T0);
        }
        V16 weights[Row::kVecs];
        rows[i].Load(col, weights);
#pragma GCC unroll 2
        for (int v = 0; v < Row::kVecs; ++v) {
#pragma GCC unroll 4
          for (int j = 0; j < T; ++j) {
            acc[i][j] = Fma(weights[v], LoadX(x + j * cols + col + kLanes * v), acc[i][j]);
          }
        }
      }
    }
  }
  if constexpr (Row::kHasTail) {
    if (col_end == cols && full < cols) {  // lanes past the last column keep their value
      const uint64_t n = cols - full;
      const TailMask mask(n);
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const V16 weights = rows[i].LoadTail(full, n);
#pragma GCC unroll 4
        for (int j = 0; j < T; ++j) {
          const float* xt = x + j * cols + full;
          const V16 xv = {_mm256_maskload_ps(xt, mask.lo), _mm256_maskload_ps(xt + 8, mask.hi)};
          const V16 sum = Fma(weights, xv, acc[i][j]);
          acc[i][j] = {_mm256_blendv_ps(acc[i][j].lo, sum.lo, _mm256_castsi256_ps(mask.lo)),
                       _mm256_blendv_ps(acc[i][j].hi, sum.hi, _mm256_castsi256_ps(mask.hi))};
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) acc_io[i * T + j] = acc[i][j];
  }
}

// Tiles: up to 4 tokens share each dequantized chunk, with R*T <= 4 so that the
// accumulators take 8 of the 16 ymm registers.
constexpr size_t kMaxTileTokens = 4;
constexpr int RowsPerTile(int tokens) { return tokens == 1 ? 4 : tokens == 2 ? 2 : 1; }

// Column blocks and row groups as in matmul_avx512.cc.
constexpr uint64_t kInputBlockBytes = 32 << 10;
constexpr uint64_t kRowGroup = 16;
constexpr uint64_t BlockCols(int tokens) {  // a multiple of every kGroup
  return std::max<uint64_t>(512, kInputBlockBytes / (sizeof(float) * tokens) / 512 * 512);
}

template <class Row, int T>
void RowGroup(const MatrixView& w, uint64_t row, uint64_t num_rows, const float* x, float* y,
              size_t y_stride) {
  constexpr int R = RowsPerTile(T);
  constexpr uint64_t kBlock = BlockCols(T);
  V16 acc[kRowGroup * T];
  for (V16& a : acc) a = {_mm256_setzero_ps(), _mm256_setzero_ps()};
  for (uint64_t col = 0; col < w.cols; col += kBlock) {
    const uint64_t end = std::min(w.cols, col + kBlock);
    uint64_t i = 0;
    for (; i + R <= num_rows; i += R) TileColumns<Row, R, T>(w, row + i, x, col, end, &acc[i * T]);
    for (; i < num_rows; ++i) TileColumns<Row, 1, T>(w, row + i, x, col, end, &acc[i * T]);
  }
  for (uint64_t i = 0; i < num_rows; ++i) {
    for (int j = 0; j < T; ++j) y[j * y_stride + row + i] = Reduce(acc[i * T + j]);
  }
}

template <class Row>
void MatMulFormat(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                  size_t row_end, float* y, size_t y_stride) {
  using GroupFn = void (*)(const MatrixView&, uint64_t, uint64_t, const float*, float*, size_t);
  static constexpr GroupFn kByTokens[kMaxTileTokens] = {RowGroup<Row, 1>, RowGroup<Row, 2>,
                                                        RowGroup<Row, 3>, RowGroup<Row, 4>};
  for (uint64_t row = row_begin; row < row_end; row += kRowGroup) {
    const uint64_t num_rows = std::min<uint64_t>(kRowGroup, row_end - row);
    for (size_t t0 = 0; t0 < num_tokens; t0 += kMaxTileTokens) {
      const size_t tokens = std::min(kMaxTileTokens, num_tokens - t0);
      kByTokens[tokens - 1](w, row, num_rows, x + t0 * w.cols, y + t0 * y_stride, y_stride);
    }
  }
}

}  // namespace

void MatMulRowsAvx2(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                    size_t row_end, float* y, size_t y_stride) {
  switch (w.format) {
    case TensorFormat::kF32:
      return MatMulFormat<F32Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
    case TensorFormat::kF16:
      return MatMulFormat<F16Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
    case TensorFormat::kBF16:
      return MatMulFormat<Bf16Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
    case TensorFormat::kF8E4M3B128:
      return MatMulFormat<F8Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
    case TensorFormat::kQ8B32:
      return MatMulFormat<Q8Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
    case TensorFormat::kQ4B32:
      return MatMulFormat<Q4Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
  }
}

}  // namespace warp::computed::kernels::internal
