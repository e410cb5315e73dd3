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
//   void Decode(const std::byte*, float scale, Vec out[2]); and for vq3r_b32
//   void Vq3r(const uint32_t codes[8], float scale, const float* sums, Vec out[2])
//   (Vq3rCodebook::sums). (Structs, not
//   function pointers as template arguments: those would drop the vector types'
//   attributes.)

#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/kernels/matmul.h"

namespace warp::kernels::internal {
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

// f8_e4m3_b128, f8_e4m3_b32: an f32 scale per kTile x kTile tile. A Load's 16
// columns lie in one tile: kTile is a multiple of 16.
template <class Ops, uint64_t kTile>
struct F8Row {
  static_assert(kTile % kLanes == 0);
  using Vec = typename Ops::Vec;
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols; }
  static constexpr uint64_t kStep = kLanes, kGroup = kWholeRow;
  static constexpr int kVecs = 1;
  static constexpr bool kHasTail = true;
  const uint8_t* p;
  const float* scales;  // the row's row of tiles in the scale grid

  void Init(const MatrixView& w, uint64_t row) {
    p = reinterpret_cast<const uint8_t*>(w.data) + row * w.cols;
    const uint64_t tiles_per_row = (w.cols + kTile - 1) / kTile;
    scales = reinterpret_cast<const float*>(w.scale) + (row / kTile) * tiles_per_row;
  }
  void Prepare(uint64_t, uint64_t, uint64_t) {}
  void Load(uint64_t col, Vec* out) const { out[0] = Ops::F8(p + col, scales[col / kTile]); }
  Vec LoadTail(uint64_t col, uint64_t n) const {
    uint8_t padded[kLanes] = {};
    std::memcpy(padded, p + col, n);
    return Ops::F8(padded, scales[col / kTile]);
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

// vq3r_b32: a 32-column block is 8 codes of 12 bits (a little-endian bit
// stream, 12 bytes), each the sum of two centroids of the matrix's codebook.
template <class Ops>
struct Vq3rRow {
  using Vec = typename Ops::Vec;
  static constexpr uint64_t DataBytes(uint64_t cols) { return cols / 8 * 3; }
  static constexpr uint64_t kStep = kRowBlock, kGroup = HalfScales<Ops>::kGroup;
  static constexpr int kVecs = 2;
  static constexpr bool kHasTail = false;  // ShapeProblem: whole blocks only
  const std::byte* p;
  const float* sums;  // the codebook's, code * 4 + k
  HalfScales<Ops> scale;

  void Init(const MatrixView& w, uint64_t row) {
    p = w.data + row * DataBytes(w.cols);
    sums = w.codebook->sums.data();
    scale.Init(w, row);
  }
  void Prepare(uint64_t col, uint64_t end, uint64_t ahead) { scale.Prepare(col, end, ahead); }
  // Inlined by force: out of line, the codes and the Vecs went through the stack.
  [[gnu::always_inline]] void Load(uint64_t col, Vec* out) const {
    const std::byte* block = p + DataBytes(col);
    uint64_t low;
    uint32_t high;
    std::memcpy(&low, block, 8);
    std::memcpy(&high, block + 8, 4);
    const uint32_t codes[8] = {static_cast<uint32_t>(low & 0xfff),
                               static_cast<uint32_t>(low >> 12 & 0xfff),
                               static_cast<uint32_t>(low >> 24 & 0xfff),
                               static_cast<uint32_t>(low >> 36 & 0xfff),
                               static_cast<uint32_t>(low >> 48 & 0xfff),
                               static_cast<uint32_t>((low >> 60 | uint64_t{high} << 4) & 0xfff),
                               high >> 8 & 0xfff,
                               high >> 20};
    Ops::Vq3r(codes, scale.Get(col), sums, out);
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

// The other ggml formats. Per block, Prepare converts its scales (and mins) to
// floats once (Kind::Scales: d times each sub-block's small integer, as the
// scalar code); per 32 columns, Kind::Codes gathers their codes as 32 int8 in
// column order and Ops::GgmlCodes<kMinus> makes float(code) * scale (- min) of
// each 16 columns, two roundings as in DequantizeRow (warp_kernels is built with
// -ffp-contract=off, so no fma). Kind::Codes uses AVX2 integer ops: both
// including files enable AVX2 (AVX-512F implies it). A Kind has kElements (32 or
// 256) and kBytes a block, kScaleCols columns a scale, kHasMin, and kNibbles if
// its codes are 0-15 under one scale per 32 columns (Ops::GgmlNibbles may look
// them up in a table of the 16 values).
inline __m256i Load256(const std::byte* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
inline float HalfAt(const std::byte* p) {
  uint16_t half;
  std::memcpy(&half, p, sizeof(half));
  return _cvtsh_ss(half);  // exact, as HalfToFloat
}
// Each byte shifted right by `count` (< 8) and masked: vpsrlw moves bits of a
// byte's neighbour into its top count bits, which `mask` (< 2^(8 - count)) drops.
inline __m256i ShiftMask(__m256i bytes, uint64_t count, int8_t mask) {
  return _mm256_and_si256(_mm256_srl_epi16(bytes, _mm_cvtsi64_si128(static_cast<int64_t>(count))),
                          _mm256_set1_epi8(mask));
}
// 16 bytes of nibbles in ggml_q4_0's order as 32 codes: the low nibbles, then the high.
inline __m256i SplitNibbles32(const std::byte* p) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  const __m128i low4 = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(packed, 4), low4),
                          _mm_and_si128(packed, low4));
}
// ggml_q5_0 / _q5_1: bit t of the 32-bit qh at p as 0x10 in byte t.
inline __m256i HighBits32(const std::byte* p) {
  uint32_t bits;
  std::memcpy(&bits, p, sizeof(bits));
  const __m256i spread =  // byte t of a lane <- byte t / 8 of qh (lane 1: t / 8 + 2)
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(bits)),
                          _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2,
                                           2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201));
  return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit),
                          _mm256_set1_epi8(0x10));
}
// out[i] = float(int32 lane i) * d for 8 lanes.
inline void StoreTimes(__m256i ints, float d, float* out) {
  _mm256_storeu_ps(out, _mm256_mul_ps(_mm256_cvtepi32_ps(ints), _mm256_set1_ps(d)));
}
inline __m256i WidenU8(uint64_t bytes) {
  return _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<int64_t>(bytes)));
}

struct GgmlQ4_1Kind {  // d, m, qs[16]; q * d + m computed as q * d - (-m), the same sum
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ4_1);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 32;
  static constexpr bool kHasMin = true, kNibbles = true;
  static void Scales(const std::byte* b, float* scale, float* min) {
    scale[0] = HalfAt(b);
    min[0] = -HalfAt(b + 2);
  }
  static __m256i Codes(const std::byte* b, uint64_t) { return SplitNibbles32(b + 4); }
};
struct GgmlQ5_0Kind {  // d, qh[4], qs[16]
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ5_0);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 32;
  static constexpr bool kHasMin = false, kNibbles = false;
  static void Scales(const std::byte* b, float* scale, float*) { scale[0] = HalfAt(b); }
  static __m256i Codes(const std::byte* b, uint64_t) {
    return _mm256_sub_epi8(_mm256_or_si256(SplitNibbles32(b + 6), HighBits32(b + 2)),
                           _mm256_set1_epi8(16));
  }
};
struct GgmlQ5_1Kind {  // d, m, qh[4], qs[16]
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ5_1);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 32;
  static constexpr bool kHasMin = true, kNibbles = false;
  static void Scales(const std::byte* b, float* scale, float* min) {
    scale[0] = HalfAt(b);
    min[0] = -HalfAt(b + 2);
  }
  static __m256i Codes(const std::byte* b, uint64_t) {
    return _mm256_or_si256(SplitNibbles32(b + 8), HighBits32(b + 4));
  }
};

struct GgmlQ2_KKind {  // scales[16] (scale | min << 4), qs[64], d, dmin
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ2_K);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 16;
  static constexpr bool kHasMin = true, kNibbles = false;
  static void Scales(const std::byte* b, float* scale, float* min) {
    const float d = HalfAt(b + 80), dmin = HalfAt(b + 82);
    for (int half = 0; half < 2; ++half) {
      uint64_t bytes;
      std::memcpy(&bytes, b + 8 * half, sizeof(bytes));
      StoreTimes(WidenU8(bytes & 0x0f0f0f0f0f0f0f0f), d, scale + 8 * half);
      StoreTimes(WidenU8(bytes >> 4 & 0x0f0f0f0f0f0f0f0f), dmin, min + 8 * half);
    }
  }
  static __m256i Codes(const std::byte* b, uint64_t j) {  // bits 2k of qs[32h + t]
    return ShiftMask(Load256(b + 16 + 32 * (j / 128)), 2 * (j % 128 / 32), 0x03);
  }
};
struct GgmlQ3_KKind {  // hmask[32], qs[64], scales[12] (6 bits each), d
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ3_K);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 16;
  static constexpr bool kHasMin = false, kNibbles = false;
  static void Scales(const std::byte* b, float* scale, float*) {
    uint32_t u[3];
    std::memcpy(u, b + 96, sizeof(u));
    // Scale s: low 4 bits nibble s / 8 of byte s % 8, high 2 bits 2 * (s / 4) of
    // byte 8 + s % 4 (u[2]).
    const uint64_t low = u[0] | uint64_t{u[1]} << 32;
    uint64_t words[2];
    for (int i = 0; i < 2; ++i) {  // scales 8i .. 8i + 7 as bytes
      const uint64_t nibbles = low >> (4 * i) & 0x0f0f0f0f0f0f0f0f;
      const uint64_t top = (uint64_t{u[2]} >> (4 * i) & 0x03030303) |
                           (uint64_t{u[2]} >> (4 * i + 2) & 0x03030303) << 32;
      words[i] = nibbles | top << 4;
    }
    const float d = HalfAt(b + 108);
    const __m256i bias = _mm256_set1_epi32(32);
    for (int i = 0; i < 2; ++i)
      StoreTimes(_mm256_sub_epi32(WidenU8(words[i]), bias), d, scale + 8 * i);
  }
  static __m256i Codes(const std::byte* b, uint64_t j) {
    const uint64_t h = j / 128, k = j % 128 / 32;
    const __m256i low = ShiftMask(Load256(b + 32 + 32 * h), 2 * k, 0x03);
    const __m256i high = ShiftMask(Load256(b), 4 * h + k, 0x01);  // clear: less 4
    return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 2)), _mm256_set1_epi8(4));
  }
};
// ggml_q4_k / _q5_k: the 8 scales and 8 mins of get_scale_min_k4, 4 at a time
// in 32-bit words of the 12 bytes: sub-blocks 0-3 are the low 6 bits of bytes
// 0-3 (scales) and 4-7 (mins); 4-7 the nibbles of bytes 8-11 under the top 2
// bits of bytes 0-3 (scales) and 4-7 (mins).
inline void Q4KScalesMins(const std::byte* q, float d, float dmin, float* scale, float* min) {
  uint32_t u[3];
  std::memcpy(u, q, sizeof(u));
  const uint32_t scales_hi = (u[2] & 0x0f0f0f0f) | (u[0] >> 6 & 0x03030303) << 4;
  const uint32_t mins_hi = (u[2] >> 4 & 0x0f0f0f0f) | (u[1] >> 6 & 0x03030303) << 4;
  StoreTimes(WidenU8((u[0] & 0x3f3f3f3f) | uint64_t{scales_hi} << 32), d, scale);
  StoreTimes(WidenU8((u[1] & 0x3f3f3f3f) | uint64_t{mins_hi} << 32), dmin, min);
}
struct GgmlQ4_KKind {  // d, dmin, scales[12], qs[128]
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ4_K);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 32;
  static constexpr bool kHasMin = true, kNibbles = true;
  static void Scales(const std::byte* b, float* scale, float* min) {
    Q4KScalesMins(b + 4, HalfAt(b), HalfAt(b + 2), scale, min);
  }
  static __m256i Codes(const std::byte* b, uint64_t j) {  // sub-block s = j / 32
    return ShiftMask(Load256(b + 16 + 32 * (j / 64)), 4 * (j / 32 % 2), 0x0f);
  }
};
struct GgmlQ5_KKind {  // d, dmin, scales[12], qh[32], qs[128]
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ5_K);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 32;
  static constexpr bool kHasMin = true, kNibbles = false;
  static void Scales(const std::byte* b, float* scale, float* min) {
    Q4KScalesMins(b + 4, HalfAt(b), HalfAt(b + 2), scale, min);
  }
  static __m256i Codes(const std::byte* b, uint64_t j) {
    const __m256i low = ShiftMask(Load256(b + 48 + 32 * (j / 64)), 4 * (j / 32 % 2), 0x0f);
    const __m256i high = ShiftMask(Load256(b + 16), j / 32, 0x01);
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
  }
};
struct GgmlQ6_KKind {  // ql[128], qh[64], int8 scales[16], d
  static constexpr FormatTraits kTraits = TraitsOf(TensorFormat::kGgmlQ6_K);
  static constexpr uint64_t kElements = kTraits.block_elements, kBytes = kTraits.block_bytes;
  static constexpr uint64_t kScaleCols = 16;
  static constexpr bool kHasMin = false, kNibbles = false;
  static void Scales(const std::byte* b, float* scale, float*) {
    const float d = HalfAt(b + 208);
    for (int i = 0; i < 2; ++i) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(b + 192 + 8 * i));
      StoreTimes(_mm256_cvtepi8_epi32(bytes), d, scale + 8 * i);
    }
  }
  static __m256i Codes(const std::byte* b, uint64_t j) {
    const uint64_t h = j / 128, k = j % 128 / 32;
    const __m256i low = ShiftMask(Load256(b + 64 * h + 32 * (k % 2)), 4 * (k / 2), 0x0f);
    const __m256i high = ShiftMask(Load256(b + 128 + 32 * h), 2 * k, 0x03);
    return _mm256_sub_epi8(_mm256_or_si256(low, _mm256_slli_epi16(high, 4)), _mm256_set1_epi8(32));
  }
};

template <class Ops, class Kind>
struct GgmlCodeRow {
  using Vec = typename Ops::Vec;
  // Bytes of `cols` columns: exact for whole blocks (all a row is); for part of
  // a block its share, which TileColumns uses only to place its prefetches.
  static constexpr uint64_t DataBytes(uint64_t cols) {
    return cols * Kind::kBytes / Kind::kElements;
  }
  static constexpr uint64_t kStep = kRowBlock, kGroup = Kind::kElements;
  static constexpr int kVecs = 2;
  static constexpr bool kHasTail = false;  // ShapeProblem: whole blocks only
  static constexpr uint64_t kScales = Kind::kElements / Kind::kScaleCols;
  const std::byte* p;
  const std::byte* block;  // the one whose scales Prepare converted
  alignas(32) float scale[kScales];
  alignas(32) float min[kScales];

  void Init(const MatrixView& w, uint64_t row) { p = w.data + row * DataBytes(w.cols); }
  void Prepare(uint64_t col, uint64_t, uint64_t) {
    block = p + col / Kind::kElements * Kind::kBytes;
    Kind::Scales(block, scale, min);
  }
  void Load(uint64_t col, Vec* out) const {
    const uint64_t j = col % Kind::kElements;
    const uint64_t s0 = j / Kind::kScaleCols, s1 = (j + kLanes) / Kind::kScaleCols;
    if constexpr (Kind::kNibbles) {  // codes 0-15, kScaleCols 32: s0 == s1
      Ops::template GgmlNibbles<Kind::kHasMin>(Kind::Codes(block, j), scale[s0],
                                               Kind::kHasMin ? min[s0] : 0.0f, out);
    } else if constexpr (Kind::kHasMin) {
      Ops::template GgmlCodes<true>(Kind::Codes(block, j), scale[s0], scale[s1], min[s0], min[s1],
                                    out);
    } else {
      Ops::template GgmlCodes<false>(Kind::Codes(block, j), scale[s0], scale[s1], 0.0f, 0.0f, out);
    }
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

// The SIMD row decoder of each format: the ISA family's row of the kernels'
// format table (format_kernels.h), one specialization per TensorFormat.
template <class Ops, TensorFormat F>
struct RowOf;
// clang-format off
template <class Ops> struct RowOf<Ops, TensorFormat::kF32> { using Type = ElementRow<Ops, float, typename Ops::F32>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kF16> { using Type = ElementRow<Ops, uint16_t, typename Ops::F16>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kBF16> { using Type = ElementRow<Ops, uint16_t, typename Ops::Bf16>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kF8E4M3B128> { using Type = F8Row<Ops, kFp8Block128>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kQ8B32> { using Type = BlockRow<Ops, HalfScales<Ops>, kRowBlock, typename Ops::Q8>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kQ4B32> { using Type = BlockRow<Ops, HalfScales<Ops>, kRowBlock / 2, typename Ops::Q4>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kMxfp4B32> { using Type = BlockRow<Ops, E8M0Scales, kRowBlock / 2, typename Ops::Mxfp4>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ8_0> { using Type = GgmlBlockRow<Ops, GgmlHalfScale, TraitsOf(TensorFormat::kGgmlQ8_0).block_bytes, typename Ops::Q8>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ4_0> { using Type = GgmlBlockRow<Ops, GgmlHalfScale, TraitsOf(TensorFormat::kGgmlQ4_0).block_bytes, typename Ops::Q4Split>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlMxfp4> { using Type = GgmlBlockRow<Ops, GgmlE8M0HalfScale, TraitsOf(TensorFormat::kGgmlMxfp4).block_bytes, typename Ops::Mxfp4Split>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ4_1> { using Type = GgmlCodeRow<Ops, GgmlQ4_1Kind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ5_0> { using Type = GgmlCodeRow<Ops, GgmlQ5_0Kind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ5_1> { using Type = GgmlCodeRow<Ops, GgmlQ5_1Kind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ2_K> { using Type = GgmlCodeRow<Ops, GgmlQ2_KKind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ3_K> { using Type = GgmlCodeRow<Ops, GgmlQ3_KKind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ4_K> { using Type = GgmlCodeRow<Ops, GgmlQ4_KKind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ5_K> { using Type = GgmlCodeRow<Ops, GgmlQ5_KKind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kGgmlQ6_K> { using Type = GgmlCodeRow<Ops, GgmlQ6_KKind>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kVq3rB32> { using Type = Vq3rRow<Ops>; };
template <class Ops> struct RowOf<Ops, TensorFormat::kF8E4M3B32> { using Type = F8Row<Ops, kFp8Block32>; };
// clang-format on

// MatMulRows for one ISA, with its contract (arguments already checked).
template <class Ops>
void MatMulRowsWith(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                    size_t row_end, float* y, size_t y_stride) {
  VisitFormat(w.format, [&]<TensorFormat F>() {
    MatMulFormat<Ops, typename RowOf<Ops, F>::Type>(w, x, num_tokens, row_begin, row_end, y,
                                                    y_stride);
  });
}

}  // namespace
}  // namespace warp::kernels::internal
