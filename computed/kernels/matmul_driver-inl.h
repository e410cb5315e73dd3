// The ISA-independent half of the SIMD kernels of MatMulRows (matmul.h): the
// row decoders' bookkeeping and the loop nest (row groups, token tiles, column
// blocks, row tiles, columns, lane reduction). Included only by matmul_avx2.cc
// and matmul_avx512.cc; each supplies an `Ops` struct with its vector type and
// intrinsics and calls MatMulRowsWith<Ops>.
//
// Everything is in an anonymous namespace, on purpose: each including file is
// compiled with different -m flags, and an inline function shared by name
// across them could be linked from the AVX-512 file into an AVX2-only caller.
// Internal linkage keeps every instantiation in the file whose flags built it.
//
// A tile of R rows x T tokens keeps R*T accumulators (one Vec of 16 lanes per
// (row, token) output, lane L being acc[L] of the summation order) in
// registers: each 16 columns of a row are dequantized once and used by the T
// tokens, and the R rows give R independent fma chains, which hides the fma
// latency when T is small (one chain alone runs at one fma per 4 cycles).
// Loop nest, outermost first: row groups of 16 rows; token tiles of up to 4;
// column blocks (the tile's inputs stay in L1); tiles of R rows; columns.
// Costs measured on the dev VM (Xeon, 2.6 GHz, one core) are next to each choice.
//
// What Ops provides. Vec holds 16 float lanes; Mask selects the first n < 16.
//   Vec Zero(); Vec Fma(Vec w, Vec x, Vec acc); Vec LoadX(const float*);
//   Mask TailMask(uint64_t n); Vec LoadXTail(const float*, Mask) reads only
//   the masked lanes; Vec FmaTail(Vec w, Vec x, Vec acc, Mask) leaves the other
//   lanes of acc as they were; float Reduce(Vec), step 3 of the summation order;
//   constexpr int RowsPerTile(int tokens), with R*T accumulators fitting the
//   register file; kScaleGroup, the row blocks whose f16 scales
//   HalfScales(const uint16_t*, uint64_t count, float*) converts at once.
//   Decoders, each bit-equal to DequantizeRow: for 16 columns Vec F8(const uint8_t*,
//   float scale) and the structs F32, F16, Bf16 with Vec Decode(const Code*); for
//   one 32-column block the structs Q8, Q4, Mxfp4, and Q4Split, Mxfp4Split
//   (ggml's nibble order: elements 0-15 low nibbles, 16-31 high) with
//   void Decode(const std::byte*, float scale, Vec out[2]). (Structs, not
//   function pointers as template arguments: those would drop the vector types'
//   attributes.)

#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "computed/kernels/matmul.h"

namespace warp::computed::kernels::internal {
namespace {

constexpr uint64_t kLanes = 16;
constexpr uint64_t kWholeRow = uint64_t{1} << 60;  // Prepare() group for formats without one

// Row decoders. Each turns one row of one format into Vecs:
//   kStep columns per Load(), as kVecs Vecs; Prepare(col, end, ahead) runs
//   before the Loads of columns [col, end), a group of at most kGroup columns,
//   and prefetches what it reads for the row `ahead` rows down; LoadTail(col, n)
//   (formats with kHasTail) decodes the partial last n < 16 columns from a
//   zero-padded copy, once per row, so the copy costs nothing that matters;
//   `p` is the row's data and DataBytes(n) the bytes of n of its columns.

// f32, f16, bf16: one code an element, no scale.
template <class Ops, class Code, class Decoder>
struct ElementRow {
  using Vec = typename Ops::Vec;
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols * sizeof(Code); }
  static constexpr uint64_t kStep = kLanes, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const Code* p;

  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const Code*>(w.data) + row * w.cols;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, Vec* out) const { out[0] = Decoder::Decode(p + col); }
  Vec LoadTail(uint64_t col, uint64_t n) const {
    Code padded[kLanes] = {};
    std::memcpy(padded, p + col, n * sizeof(Code));
    return Decoder::Decode(padded);
  }
};

template <class Ops>
struct F8Row {
  using Vec = typename Ops::Vec;
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols; }
  static constexpr uint64_t kStep = kLanes, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint8_t* p;
  const float* scales;  // the row's 128-row block of the scale grid

  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint8_t*>(w.data) + row * w.cols;
    const uint64_t blocks_per_row = (w.cols + kFp8Block - 1) / kFp8Block;
    scales = reinterpret_cast<const float*>(w.scale) + (row / kFp8Block) * blocks_per_row;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, Vec* out) const { out[0] = Ops::F8(p + col, scales[col / kFp8Block]); }
  Vec LoadTail(uint64_t col, uint64_t n) const {
    uint8_t padded[kLanes] = {};
    std::memcpy(padded, p + col, n);
    return Ops::F8(padded, scales[col / kFp8Block]);
  }
};

// q8_b32, q4_b32: Prepare() converts the f16 scales of Ops::kScaleGroup blocks
// at once, so that each block's scale is one load instead of a conversion.
template <class Ops>
struct HalfScales {
  static constexpr uint64_t kGroup = Ops::kScaleGroup * kRowBlock;
  const uint16_t* f16;
  uint64_t row_blocks;
  alignas(64) float f32[Ops::kScaleGroup];

  void Init(const MatrixView& w, uint64_t row) {
    row_blocks = w.cols / kRowBlock;
    f16 = reinterpret_cast<const uint16_t*>(w.scale) + row * row_blocks;
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) {
    const uint64_t block = col / kRowBlock;
    // Scales are a stream of their own, 1/8 of the data: without this prefetch
    // 1 token on AVX-512 read q4 at 9.6 GB/s and q8 at 13.4; with it 10.4 and 14.2.
    _mm_prefetch(reinterpret_cast<const char*>(f16 + block + ahead * row_blocks), _MM_HINT_T0);
    Ops::HalfScales(f16 + block, (end - col) / kRowBlock, f32);
  }
  float Get(uint64_t col) const { return f32[(col / kRowBlock) % Ops::kScaleGroup]; }
};

// mxfp4_b32: an E8M0 byte is its scale's exponent, so Get() is one table load.
struct E8M0Scales {
  static constexpr uint64_t kGroup = 16 * kRowBlock;  // a prefetch per 16 bytes of scales
  const uint8_t* e8m0;
  uint64_t row_blocks;

  void Init(const MatrixView& w, uint64_t row) {
    row_blocks = w.cols / kRowBlock;
    e8m0 = reinterpret_cast<const uint8_t*>(w.scale) + row * row_blocks;
  }
  void Prepare(uint64_t col, uint64_t, uint64_t ahead) {
    _mm_prefetch(reinterpret_cast<const char*>(e8m0 + col / kRowBlock + ahead * row_blocks),
                 _MM_HINT_T0);
  }
  float Get(uint64_t col) const { return kE8M0Scale[e8m0[col / kRowBlock]]; }
};

// Formats with a scale per 32-column block: kBlockBytes of data a block.
template <class Ops, class Scales, uint64_t kBlockBytes, class Decoder>
struct BlockRow {
  using Vec = typename Ops::Vec;
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols / kRowBlock * kBlockBytes; }
  static constexpr uint64_t kStep = kRowBlock, kGroup = Scales::kGroup;
  static constexpr int kVecs = 2;
  static constexpr bool kHasTail = false;  // ShapeProblem: whole blocks only
  const std::byte* p;
  Scales scale;

  void Init(const MatrixView& w, uint64_t row) {
    p = w.data + row * DataBytes(w.cols);
    scale.Init(w, row);
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) { scale.Prepare(col, end, ahead); }
  void Load(uint64_t col, Vec* out) const {
    Decoder::Decode(p + DataBytes(col), scale.Get(col), out);
  }
};

// ggml block formats: each 32-column block is its scale and then its codes.
// Scales come from the block itself, so Prepare has nothing to convert ahead.
struct GgmlHalfScale {  // ggml_q8_0, ggml_q4_0: f16 d first
  static constexpr uint64_t kCodes = 2;
  static float Get(const std::byte* block) {
    uint16_t half;
    std::memcpy(&half, block, sizeof(half));
    return _cvtsh_ss(half);  // exact, as HalfToFloat
  }
};
struct GgmlE8M0HalfScale {  // ggml_mxfp4: E8M0 e first
  static constexpr uint64_t kCodes = 1;
  static float Get(const std::byte* block) {
    return kE8M0HalfScale[static_cast<uint8_t>(block[0])];
  }
};

template <class Ops, class Scale, uint64_t kBlockBytes, class Decoder>
struct GgmlBlockRow {
  using Vec = typename Ops::Vec;
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols / kRowBlock * kBlockBytes; }
  static constexpr uint64_t kStep = kRowBlock, kGroup = kWholeRow;
  static constexpr int kVecs = 2;
  static constexpr bool kHasTail = false;  // ShapeProblem: whole blocks only
  const std::byte* p;

  void Init(const MatrixView& w, uint64_t row) { p = w.data + row * DataBytes(w.cols); }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, Vec* out) const {
    const std::byte* block = p + DataBytes(col);
    Decoder::Decode(block + Scale::kCodes, Scale::Get(block), out);
  }
};

// Columns [col_begin, col_end) of R rows x T tokens. acc_io[i * T + j] holds
// the 16 lanes of row `row + i`, token j between column blocks: a store and a
// reload of a register are exact, so blocking does not change the summation
// order. x points at the tile's first token.
template <class Ops, class Row, int R, int T>
void TileColumns(const MatrixView& w, uint64_t row, const float* x, uint64_t col_begin,
                 uint64_t col_end, typename Ops::Vec* acc_io) {
  using Vec = typename Ops::Vec;
  const uint64_t cols = w.cols;
  Row rows[R];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) rows[i].Init(w, row + i);
  Vec acc[R][T];
#pragma GCC unroll 8
  for (int i = 0; i < R; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < T; ++j) acc[i][j] = acc_io[i * T + j];
  }
  // The same columns of the next tile's rows (R rows down; rows are contiguous):
  // without this software prefetch, 1 token on AVX-512 read q4 at 6.4 GB/s and
  // q8 at 10.3 GB/s from DRAM; with it 9.0 and 13.8 (the hardware prefetchers
  // stop at 4 KiB pages and start each row's stream late).
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
        Vec weights[Row::kVecs];
        if (Row::DataBytes(col) % 64 < Row::DataBytes(Row::kStep)) {  // once per cache line
          _mm_prefetch(reinterpret_cast<const char*>(rows[i].p) + Row::DataBytes(col) + next_tile,
                       _MM_HINT_T0);
        }
        rows[i].Load(col, weights);
#pragma GCC unroll 2
        for (int v = 0; v < Row::kVecs; ++v) {
#pragma GCC unroll 8
          for (int j = 0; j < T; ++j) {
            acc[i][j] =
                Ops::Fma(weights[v], Ops::LoadX(x + j * cols + col + kLanes * v), acc[i][j]);
          }
        }
      }
    }
  }
  if constexpr (Row::kHasTail) {
    if (col_end == cols && full < cols) {  // lanes past the last column keep their value
      const uint64_t n = cols - full;
      const auto mask = Ops::TailMask(n);
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const Vec weights = rows[i].LoadTail(full, n);
#pragma GCC unroll 8
        for (int j = 0; j < T; ++j) {
          const Vec xv = Ops::LoadXTail(x + j * cols + full, mask);
          acc[i][j] = Ops::FmaTail(weights, xv, acc[i][j], mask);
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

// Up to 4 tokens share each dequantized chunk; more tokens are done 4 at a time.
// Tiles of 2 rows x 8 tokens were tried on AVX-512 and ran 25-35% slower than
// two 4x4 tiles (bf16, q4, f32 at 8 tokens), though they dequantize each chunk
// only once.
constexpr size_t kMaxTileTokens = 4;

// Column blocks keep the inputs of a token tile in L1 while every row of a row
// group uses them: unblocked, 8 tokens x 7168 columns (229 KB) came from L2 once
// per tile, and bf16 at 8 tokens ran at 4.1 GB/s instead of 6.8 (AVX-512).
constexpr uint64_t kInputBlockBytes = 32 << 10;  // of x per column block, all tokens
constexpr uint64_t kRowGroup = 16;
constexpr uint64_t BlockCols(int tokens) {  // a multiple of every kGroup
  return std::max<uint64_t>(512, kInputBlockBytes / (sizeof(float) * tokens) / 512 * 512);
}

// Rows [row, row + num_rows) (num_rows <= kRowGroup) for T tokens; y points at
// the tile's first token.
template <class Ops, class Row, int T>
void RowGroup(const MatrixView& w, uint64_t row, uint64_t num_rows, const float* x, float* y,
              size_t y_stride) {
  constexpr int R = Ops::RowsPerTile(T);
  constexpr uint64_t kBlock = BlockCols(T);
  static_assert(kBlock % Row::kGroup == 0 || Row::kGroup == kWholeRow);
  typename Ops::Vec acc[kRowGroup * T];
  for (auto& a : acc) a = Ops::Zero();
  for (uint64_t col = 0; col < w.cols; col += kBlock) {
    const uint64_t end = std::min(w.cols, col + kBlock);
    uint64_t i = 0;
    for (; i + R <= num_rows; i += R) {
      TileColumns<Ops, Row, R, T>(w, row + i, x, col, end, &acc[i * T]);
    }
    for (; i < num_rows; ++i) TileColumns<Ops, Row, 1, T>(w, row + i, x, col, end, &acc[i * T]);
  }
  for (uint64_t i = 0; i < num_rows; ++i) {
    for (int j = 0; j < T; ++j) y[j * y_stride + row + i] = Ops::Reduce(acc[i * T + j]);
  }
}

// Row groups outermost, so a group's weights are read from memory once and
// stay in L2 for the later token tiles.
template <class Ops, class Row>
void MatMulFormat(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                  size_t row_end, float* y, size_t y_stride) {
  using GroupFn = void (*)(const MatrixView&, uint64_t, uint64_t, const float*, float*, size_t);
  static constexpr GroupFn kByTokens[kMaxTileTokens] = {
      RowGroup<Ops, Row, 1>, RowGroup<Ops, Row, 2>, RowGroup<Ops, Row, 3>, RowGroup<Ops, Row, 4>};
  for (uint64_t row = row_begin; row < row_end; row += kRowGroup) {
    const uint64_t num_rows = std::min<uint64_t>(kRowGroup, row_end - row);
    for (size_t t0 = 0; t0 < num_tokens; t0 += kMaxTileTokens) {
      const size_t tokens = std::min(kMaxTileTokens, num_tokens - t0);
      kByTokens[tokens - 1](w, row, num_rows, x + t0 * w.cols, y + t0 * y_stride, y_stride);
    }
  }
}

// MatMulRows for one ISA, with its contract (arguments already checked).
template <class Ops>
void MatMulRowsWith(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                    size_t row_end, float* y, size_t y_stride) {
  using F32 = ElementRow<Ops, float, typename Ops::F32>;
  using F16 = ElementRow<Ops, uint16_t, typename Ops::F16>;
  using Bf16 = ElementRow<Ops, uint16_t, typename Ops::Bf16>;
  using Q8 = BlockRow<Ops, HalfScales<Ops>, kRowBlock, typename Ops::Q8>;
  using Q4 = BlockRow<Ops, HalfScales<Ops>, kRowBlock / 2, typename Ops::Q4>;
  using Mxfp4 = BlockRow<Ops, E8M0Scales, kRowBlock / 2, typename Ops::Mxfp4>;
  using GgmlQ8_0 = GgmlBlockRow<Ops, GgmlHalfScale, 34, typename Ops::Q8>;
  using GgmlQ4_0 = GgmlBlockRow<Ops, GgmlHalfScale, 18, typename Ops::Q4Split>;
  using GgmlMxfp4 = GgmlBlockRow<Ops, GgmlE8M0HalfScale, 17, typename Ops::Mxfp4Split>;
  const auto run = [&]<class Row>() {
    MatMulFormat<Ops, Row>(w, x, num_tokens, row_begin, row_end, y, y_stride);
  };
  switch (w.format) {
    case TensorFormat::kF32:
      return run.template operator()<F32>();
    case TensorFormat::kF16:
      return run.template operator()<F16>();
    case TensorFormat::kBF16:
      return run.template operator()<Bf16>();
    case TensorFormat::kF8E4M3B128:
      return run.template operator()<F8Row<Ops>>();
    case TensorFormat::kQ8B32:
      return run.template operator()<Q8>();
    case TensorFormat::kQ4B32:
      return run.template operator()<Q4>();
    case TensorFormat::kMxfp4B32:
      return run.template operator()<Mxfp4>();
    case TensorFormat::kGgmlQ8_0:
      return run.template operator()<GgmlQ8_0>();
    case TensorFormat::kGgmlQ4_0:
      return run.template operator()<GgmlQ4_0>();
    case TensorFormat::kGgmlMxfp4:
      return run.template operator()<GgmlMxfp4>();
  }
}

}  // namespace
}  // namespace warp::computed::kernels::internal
