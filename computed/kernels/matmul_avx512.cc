// The AVX-512 kernels of MatMulRows (matmul.h). This file alone is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c; matmul.cc calls it
// only when DetectIsa() says the CPU has all of them.
//
// One zmm register holds the 16 accumulator lanes of one (row, token) output,
// so the summation order of matmul.h maps onto it directly: zmm lane L is
// acc[L]. A tile of R rows x T tokens keeps R*T accumulators in registers:
// each 16 columns of a row are dequantized once and used by the T tokens, and
// the R rows give R independent fma chains, which hides the fma latency when
// T is small (one chain alone runs at one fma per 4 cycles).
//
// Loop nest, outermost first: row groups of 16 rows; token tiles of up to 4;
// column blocks (the tile's inputs stay in L1); tiles of 4 rows; columns.
// Costs measured on the dev VM (Xeon, 2.6 GHz, one core) are next to each choice.

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (`__m512 __Y = __Y;`),
// which -W(maybe-)uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

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

// Step 3 of the summation order: the same tree as ReduceLanes in matmul.cc.
inline float Reduce(__m512 acc) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // lanes 0, 1: s4[i] + s4[i + 2]
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

inline uint64_t Load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Row decoders. Each turns one row of one format into float32 weights bit-equal
// to DequantizeRow:
//   kStep columns per Load(), as kVecs vectors of 16; Prepare(col, end, ahead)
//   runs before the Loads of columns [col, end), a group of at most kGroup
//   columns, and prefetches what it reads for the row `ahead` rows down;
//   LoadTail(col, mask) gives the partial last 16 columns (formats with kHasTail);
//   `p` is the row's data and DataBytes(n) the bytes of n of its columns.

struct F32Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * 4; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const float* p;

  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const float*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, __m512* out) const { out[0] = _mm512_loadu_ps(p + col); }
  __m512 LoadTail(uint64_t col, __mmask16 mask) const {
    return _mm512_maskz_loadu_ps(mask, p + col);
  }
};

struct F16Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * 2; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint16_t* p;

  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint16_t*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, __m512* out) const {
    out[0] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + col)));
  }
  __m512 LoadTail(uint64_t col, __mmask16 mask) const {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p + col));
  }
};

struct Bf16Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * 2; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint16_t* p;

  static __m512 Widen(__m256i bf16) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16), 16));
  }
  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint16_t*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, __m512* out) const {
    out[0] = Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + col)));
  }
  __m512 LoadTail(uint64_t col, __mmask16 mask) const {
    return Widen(_mm256_maskz_loadu_epi16(mask, p + col));
  }
};

// E4M3 without a table: the code's sign, exponent and mantissa moved to the
// binary32 positions (sign | code[6:0] << 20) read as a float, times 2^120 to
// rebias the exponent from 7 to 127, is exact for normal and subnormal codes
// (a subnormal code becomes an f32 subnormal first, so this assumes the default
// MXCSR: DAZ off). NaN codes (|code| == 0x7f) are patched to the table's NaN.
struct F8Row {
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols; }
  static constexpr uint64_t kStep = 16, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint8_t* p;
  const float* scales;  // the row's 128-row block of the scale grid

  static __m512 Decode(__m128i codes, __m512 scale) {
    const __m512i wide = _mm512_cvtepi8_epi32(codes);  // sign-extended: bits 31..7 = sign
    const __m512i bits =
        _mm512_and_si512(_mm512_slli_epi32(wide, 20), _mm512_set1_epi32(int32_t(0x87f00000)));
    __m512 value = _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(0x1p120f));
    const __m128i magnitude_7f = _mm_set1_epi8(0x7f);
    const __mmask16 nan = _mm_cmpeq_epi8_mask(_mm_and_si128(codes, magnitude_7f), magnitude_7f);
    if (nan != 0) [[unlikely]] {
      const __m512i nan_bits =
          _mm512_or_si512(_mm512_and_si512(wide, _mm512_set1_epi32(int32_t(0x80000000))),
                          _mm512_set1_epi32(0x7fc00000));
      value = _mm512_mask_mov_ps(value, nan, _mm512_castsi512_ps(nan_bits));
    }
    return _mm512_mul_ps(value, scale);
  }
  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint8_t*>(w.data) + row * w.cols;
    const uint64_t blocks_per_row = (w.cols + kFp8Block - 1) / kFp8Block;
    scales = reinterpret_cast<const float*>(w.scale) + (row / kFp8Block) * blocks_per_row;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, __m512* out) const {
    out[0] = Decode(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + col)),
                    _mm512_set1_ps(scales[col / kFp8Block]));
  }
  __m512 LoadTail(uint64_t col, __mmask16 mask) const {
    return Decode(_mm_maskz_loadu_epi8(mask, p + col), _mm512_set1_ps(scales[col / kFp8Block]));
  }
};

// Row-block formats: Prepare() converts the f16 scales of 16 blocks (512
// columns) at once into `scale`, so that each block's scale is one broadcast
// load instead of a scalar conversion.
struct BlockScales {
  static constexpr uint64_t kGroup = 16 * kRowBlock;
  const uint16_t* f16;
  uint64_t row_blocks;
  alignas(64) float f32[16];

  void Init(const MatrixView& w, uint64_t row) {
    row_blocks = w.cols / kRowBlock;
    f16 = reinterpret_cast<const uint16_t*>(w.scale) + row * row_blocks;
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) {
    const uint64_t block = col / kRowBlock, count = (end - col) / kRowBlock;  // 1..16
    // Scales are a stream of their own, 1/8 of the data: without this prefetch
    // 1 token read q4 at 9.6 GB/s and q8 at 13.4; with it 10.4 and 14.2.
    _mm_prefetch(reinterpret_cast<const char*>(f16 + block + ahead * row_blocks), _MM_HINT_T0);
    const __mmask16 mask = static_cast<__mmask16>((uint32_t{1} << count) - 1);
    _mm512_store_ps(f32, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, f16 + block)));
  }
  __m512 Get(uint64_t col) const { return _mm512_set1_ps(f32[(col / kRowBlock) % 16]); }
};

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
  void Load(uint64_t col, __m512* out) const {
    const __m512 s = scale.Get(col);
    for (int v = 0; v < 2; ++v) {
      const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + col + 16 * v));
      out[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes)), s);
    }
  }
};

constexpr std::array<uint8_t, 64> MakeQ4Spread() {
  std::array<uint8_t, 64> control{};
  for (int column = 0; column < 16; ++column) {
    control[4 * column] = static_cast<uint8_t>(column / 2);      // byte c/2 of the lane's 8
    for (int k = 1; k < 4; ++k) control[4 * column + k] = 0x80;  // zero
  }
  return control;
}
alignas(64) constexpr std::array<uint8_t, 64> kQ4Spread = MakeQ4Spread();
alignas(64) constexpr std::array<int32_t, 16> kQ4Shift = {0, 4, 0, 4, 0, 4, 0, 4,
                                                          0, 4, 0, 4, 0, 4, 0, 4};
alignas(64) constexpr std::array<float, 16> kQ4Codes = {-8, -7, -6, -5, -4, -3, -2, -1,
                                                        0,  1,  2,  3,  4,  5,  6,  7};

// q4: per block, a 16-entry table (nibble - 8) * scale (one multiply per entry,
// so each entry is bit-equal to the scalar dequantization), then per 16
// columns: broadcast their 8 bytes, vpshufb puts byte c/2 under column c,
// vpsrlvd moves the high nibble down in odd columns, and vpermps looks the
// nibble up (it reads only the low 4 bits of each index, so no mask is needed).
// This decode is what limits q4 at 1 token: ~1.7 cycles per 16 columns of a row
// with the weights in cache (13 GB/s of q4 on one core), against ~0.8 for q8.
// Tried and slower: splitting nibbles per block with vpsrlw + vpunpck{l,h}bw and
// widening with vpmovzxbd (2.2 cycles); int -> float conversion plus a multiply
// instead of the table (one more op per 16 columns).
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
  void Load(uint64_t col, __m512* out) const {
    const __m512 table = _mm512_mul_ps(_mm512_load_ps(kQ4Codes.data()), scale.Get(col));
    const __m512i spread = _mm512_load_si512(kQ4Spread.data());
    const __m512i shift = _mm512_load_si512(kQ4Shift.data());
    for (int v = 0; v < 2; ++v) {
      const __m512i bytes = _mm512_set1_epi64(static_cast<int64_t>(Load64(p + col / 2 + 8 * v)));
      const __m512i nibbles = _mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, spread), shift);
      out[v] = _mm512_permutexvar_ps(nibbles, table);
    }
  }
};

// Columns [col_begin, col_end) of R rows x T tokens. acc[i * T + j] holds the 16
// lanes of row `row + i`, token j between column blocks: a store and a reload
// of a register are exact, so blocking does not change the summation order.
// x points at the tile's first token.
template <class Row, int R, int T>
void TileColumns(const MatrixView& w, uint64_t row, const float* x, uint64_t col_begin,
                 uint64_t col_end, __m512* acc_io) {
  const uint64_t cols = w.cols;
  Row rows[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) rows[i].Init(w, row + i);
  __m512 acc[R][T];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[i][j] = acc_io[i * T + j];
  }
  // The same columns of the next tile's rows (R rows down; rows are contiguous):
  // without this software prefetch, 1 token read q4 at 6.4 GB/s and q8 at
  // 10.3 GB/s from DRAM; with it 9.0 and 13.8 (the hardware prefetchers stop
  // at 4 KiB pages and start each row's stream late).
  const uint64_t next_tile = R * Row::DataBytes(cols);
  const uint64_t full = cols - cols % Row::kStep;
  const uint64_t full_end = std::min(col_end, full);
  for (uint64_t group = col_begin; group < full_end; group += Row::kGroup) {
    const uint64_t end = std::min(full_end, group + Row::kGroup);
#pragma GCC unroll 8
    for (int i = 0; i < R; ++i) rows[i].Prepare(group, end, R);
    for (uint64_t col = group; col < end; col += Row::kStep) {
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        __m512 weights[Row::kVecs];
        if (Row::DataBytes(col) % 64 < Row::DataBytes(Row::kStep)) {  // once per cache line
          _mm_prefetch(reinterpret_cast<const char*>(rows[i].p) + Row::DataBytes(col) + next_tile,
                       _MM_HINT_T0);
        }
        rows[i].Load(col, weights);
#pragma GCC unroll 2
        for (int v = 0; v < Row::kVecs; ++v) {
#pragma GCC unroll 8
          for (int j = 0; j < T; ++j) {
            const __m512 xv = _mm512_loadu_ps(x + j * cols + col + kLanes * v);
            acc[i][j] = _mm512_fmadd_ps(weights[v], xv, acc[i][j]);
          }
        }
      }
    }
  }
  if constexpr (Row::kHasTail) {
    if (col_end == cols && full < cols) {  // lanes past the last column keep their value
      const auto mask = static_cast<__mmask16>((uint32_t{1} << (cols - full)) - 1);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const __m512 weights = rows[i].LoadTail(full, mask);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const __m512 xv = _mm512_maskz_loadu_ps(mask, x + j * cols + full);
          acc[i][j] = _mm512_mask3_fmadd_ps(weights, xv, acc[i][j], mask);
        }
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc_io[i * T + j] = acc[i][j];
  }
}

// Tiles of 4 rows x up to 4 tokens: 16 accumulators, the inputs and the decode
// temporaries fit in the 32 zmm registers. Each dequantized chunk serves 4
// tokens; more tokens are done 4 at a time. Tiles of 2 rows x 8 tokens were
// tried and ran 25-35% slower than two 4x4 tiles (bf16, q4, f32 at 8 tokens),
// though they dequantize each chunk only once.
constexpr size_t kMaxTileTokens = 4;
constexpr int kTileRows = 4;

// Column blocks keep the inputs of a token tile in L1 while every row of a row
// group uses them: unblocked, 8 tokens x 7168 columns (229 KB) came from L2 once
// per tile, and bf16 at 8 tokens ran at 4.1 GB/s instead of 6.8.
constexpr uint64_t kInputBlockBytes = 32 << 10;  // of x per column block, all tokens
constexpr uint64_t kRowGroup = 16;
constexpr uint64_t BlockCols(int tokens) {  // a multiple of every kGroup
  return std::max<uint64_t>(512, kInputBlockBytes / (sizeof(float) * tokens) / 512 * 512);
}

// Rows [row, row + num_rows) (num_rows <= kRowGroup) for T tokens; y points at
// the tile's first token.
template <class Row, int T>
void RowGroup(const MatrixView& w, uint64_t row, uint64_t num_rows, const float* x, float* y,
              size_t y_stride) {
  constexpr int R = kTileRows;
  constexpr uint64_t kBlock = BlockCols(T);
  __m512 acc[kRowGroup * T];
  for (__m512& a : acc) a = _mm512_setzero_ps();
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

// Row groups outermost, so a group's weights are read from memory once and
// stay in L2 for the later token tiles.
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

void MatMulRowsAvx512(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
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
