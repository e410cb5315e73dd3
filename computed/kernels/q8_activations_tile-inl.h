// The ISA-independent half of MatMulRowsQ8's SIMD kernels (q8_activations.h):
// tiles of R rows x T tokens, groups of 4 blocks in order, the partial last
// group, the reduction. Included only by q8_activations_avx2.cc and
// q8_activations_avx512.cc; each supplies an `Ops` struct and calls
// MatMulRowsQ8With<Ops>. Everything is in an anonymous namespace for the reason
// matmul_driver-inl.h gives: each including file is compiled with other -m flags.
//
// What Ops provides:
//   Acc, the 16 lanes of one (row, token) output; GroupWeights, a group of one
//   row as loaded; Acc Zero(); float Reduce(const Acc&), step 3 of the order;
//   GroupWeights LoadFullGroup<kGgml>(const std::byte* row_data, const std::byte*
//   row_scales, uint64_t g) (row_scales: q4_b32's f16 scales, nullptr for ggml);
//   GroupWeights LoadPartialGroup(const PartialGroup&);
//   void Step<R, T>(const GroupWeights (&)[R], const TokenGroups<T>&, uint64_t g,
//   uint64_t count, Acc (&)[R][T]), the group's blocks [0, count) into acc, the
//   lanes of the others left as they were;
//   kRows and kTokens, the largest tile whose accumulators fit the registers.

#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "computed/kernels/q8_activations.h"

namespace warp::computed::kernels::internal {
namespace {

#define WARP_Q8_INLINE inline __attribute__((always_inline))

// Step 3 of the order from s[i] = acc[i] + acc[i + 8]: the halving tree of matmul.h.
WARP_Q8_INLINE float ReduceEightLanes(__m256 s8) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// ggml_q4_0: the 16 nibble bytes of block s of a group (18-byte blocks: the f16
// d, then the nibbles).
WARP_Q8_INLINE __m128i GgmlBlockNibbles(const std::byte* group, int s) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(group + 18 * s + 2));
}

// ggml_q4_0: the f16 d of a group's 4 blocks (18 bytes apart), in the low 64
// bits.
WARP_Q8_INLINE __m128i GgmlGroupHalfScales(const std::byte* group) {
  uint16_t h[4];
  for (int s = 0; s < 4; ++s) std::memcpy(&h[s], group + 18 * s, 2);
  return _mm_cvtsi64_si128(static_cast<int64_t>(uint64_t{h[0]} | uint64_t{h[1]} << 16 |
                                                uint64_t{h[2]} << 32 | uint64_t{h[3]} << 48));
}

// The last group of a row when it has count < 4 blocks: their nibble bytes
// (block s at 16 s) and f16 scales, zero past count.
struct PartialGroup {
  alignas(64) uint8_t bytes[64] = {};
  alignas(16) uint16_t halves[8] = {};

  PartialGroup(const MatrixView& w, uint64_t row, uint64_t g, uint64_t count) {
    for (uint64_t s = 0; s < count; ++s) {
      std::memcpy(bytes + 16 * s, Q4BlockNibbles(w, row, 4 * g + s), 16);
      std::memcpy(&halves[s], Q4BlockHalfScale(w, row, 4 * g + s), 2);
    }
  }
};

// The tile's activations: per token, its group 0; a group further is +128
// codes and +16 lanes.
template <int T>
struct TokenGroups {
  const int8_t* codes[T];
  const int32_t* bias[T];
  const float* lane_scale[T];
};

// Rows [row, row + R), tokens [t0, t0 + T).
template <class Ops, bool kGgml, int R, int T>
void Q8Tile(const MatrixView& w, const Q8Activations& x, uint64_t row, size_t t0, float* y,
            size_t y_stride) {
  const uint64_t blocks = w.cols / 32, full_groups = blocks / 4;
  const uint64_t row_bytes = blocks * (kGgml ? 18 : 16), group_bytes = kGgml ? 72 : 64;
  TokenGroups<T> tokens;
  for (int j = 0; j < T; ++j) {
    tokens.codes[j] = x.Codes(t0 + j, 0);
    tokens.bias[j] = x.Bias(t0 + j, 0);
    tokens.lane_scale[j] = x.LaneScale(t0 + j, 0);
  }
  const std::byte* data[R];
  const std::byte* scales[R];
  for (int i = 0; i < R; ++i) {
    data[i] = w.data + (row + i) * row_bytes;
    scales[i] = kGgml ? nullptr : w.scale + (row + i) * blocks * 2;
  }
  typename Ops::Acc acc[R][T];
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) acc[i][j] = Ops::Zero();
  }
  for (uint64_t g = 0; g < full_groups; ++g) {
    typename Ops::GroupWeights gw[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      // The same group of the row R rows down, which the next tile reads: the
      // hardware prefetchers stop at 4 KiB pages (matmul_driver-inl.h).
      const char* next = reinterpret_cast<const char*>(data[i] + R * row_bytes + g * group_bytes);
      _mm_prefetch(next, _MM_HINT_T0);
      if constexpr (kGgml) _mm_prefetch(next + 64, _MM_HINT_T0);
      gw[i] = Ops::template LoadFullGroup<kGgml>(data[i], scales[i], g);
    }
    Ops::template Step<R, T>(gw, tokens, g, 4, acc);
  }
  if (const uint64_t count = blocks % 4; count != 0) {
    typename Ops::GroupWeights gw[R];
    for (int i = 0; i < R; ++i) {
      gw[i] = Ops::LoadPartialGroup(PartialGroup(w, row + i, full_groups, count));
    }
    Ops::template Step<R, T>(gw, tokens, full_groups, count, acc);
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) y[(t0 + j) * y_stride + row + i] = Ops::Reduce(acc[i][j]);
  }
}

// Every token of rows [row, row + R): tiles of Ops::kTokens, then the rest.
template <class Ops, bool kGgml, int R>
void Q8Rows(const MatrixView& w, const Q8Activations& x, uint64_t row, float* y, size_t y_stride) {
  size_t t0 = 0;
  for (; t0 + Ops::kTokens <= x.num_tokens; t0 += Ops::kTokens) {
    Q8Tile<Ops, kGgml, R, Ops::kTokens>(w, x, row, t0, y, y_stride);
  }
  const size_t rest = x.num_tokens - t0;
  if constexpr (Ops::kTokens > 3) {
    if (rest == 3) return Q8Tile<Ops, kGgml, R, 3>(w, x, row, t0, y, y_stride);
  }
  if constexpr (Ops::kTokens > 2) {
    if (rest == 2) return Q8Tile<Ops, kGgml, R, 2>(w, x, row, t0, y, y_stride);
  }
  if (rest == 1) Q8Tile<Ops, kGgml, R, 1>(w, x, row, t0, y, y_stride);
}

template <class Ops, bool kGgml>
void Q8AllRows(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
               float* y, size_t y_stride) {
  uint64_t row = row_begin;
  for (; row + Ops::kRows <= row_end; row += Ops::kRows) {
    Q8Rows<Ops, kGgml, Ops::kRows>(w, x, row, y, y_stride);
  }
  for (; row < row_end; ++row) Q8Rows<Ops, kGgml, 1>(w, x, row, y, y_stride);
}

// MatMulRowsQ8 for one ISA, with its contract (arguments already checked).
template <class Ops>
void MatMulRowsQ8With(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
                      float* y, size_t y_stride) {
  if (w.format == TensorFormat::kGgmlQ4_0) {
    return Q8AllRows<Ops, true>(w, x, row_begin, row_end, y, y_stride);
  }
  Q8AllRows<Ops, false>(w, x, row_begin, row_end, y, y_stride);
}

}  // namespace
}  // namespace warp::computed::kernels::internal
