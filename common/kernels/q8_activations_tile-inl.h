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
//   GroupWeights LoadFullGroup<F>(const std::byte* row_data, const std::byte*
//   row_scales, uint64_t g) (row_scales: the scale sub-tensor's row, nullptr
//   for the ggml formats), with GroupNibbleBytes and GroupScales below;
//   GroupWeights LoadPartialGroup(const PartialGroup&);
//   void Step<kFp4, R, T>(const GroupWeights (&)[R], const TokenGroups<T>&,
//   uint64_t g, uint64_t count, Acc (&)[R][T]), the group's blocks [0, count)
//   into acc, the lanes of the others left as they were; each nibble becomes
//   the unsigned c + CodeOffset: itself for q4, Fp4Unsigned()'s byte for mxfp4;
//   kRows and kTokens, the largest tile whose accumulators fit the registers.

#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/kernels/q8_activations.h"

namespace warp::kernels::internal {
namespace {

#define WARP_Q8_INLINE inline __attribute__((always_inline))

// Step 3 of the order from s[i] = acc[i] + acc[i + 8]: the halving tree of matmul.h.
WARP_Q8_INLINE float ReduceEightLanes(__m256 s8) {
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// The weights' layout (q8_activations.h), as compile-time constants.
template <TensorFormat F>
struct Layout {
  static constexpr bool kScaleInBlock = ScaleInBlock(F);
  static constexpr bool kFp4 = IsFp4(F);
  static constexpr uint64_t kScaleBytes = ScaleBytesOf(F);
  static constexpr uint64_t kBlockBytes = BlockBytesInData(F);
  static constexpr uint64_t kGroupBytes = 4 * kBlockBytes;
};

// mxfp4: c + 12 of each nibble, a vpshufb table (kGgmlMxfp4Value + 12).
WARP_Q8_INLINE __m128i Fp4Unsigned() {
  return _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
}

// The 16 nibble bytes of block s of the group at `group` (a ggml format's
// blocks interleave them with their scales).
template <TensorFormat F>
WARP_Q8_INLINE __m128i GroupNibbleBytes(const std::byte* group, int s) {
  constexpr uint64_t kBytes = Layout<F>::kBlockBytes;
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(group + kBytes * s + (kBytes - 16)));
}

// dw of group g's 4 blocks, as floats.
template <TensorFormat F>
WARP_Q8_INLINE __m128 GroupScales(const std::byte* row_data, const std::byte* row_scales,
                                  uint64_t g) {
  using L = Layout<F>;
  const std::byte* first =
      L::kScaleInBlock ? row_data + L::kGroupBytes * g : row_scales + 4 * L::kScaleBytes * g;
  const uint64_t stride = L::kScaleInBlock ? L::kBlockBytes : L::kScaleBytes;
  if constexpr (L::kFp4) {  // BlockScale's tables, inline
    const auto e = [&](int s) { return static_cast<uint8_t>(first[stride * s]); };
    if constexpr (L::kScaleInBlock) {
      return _mm_setr_ps(kE8M0HalfScale[e(0)], kE8M0HalfScale[e(1)], kE8M0HalfScale[e(2)],
                         kE8M0HalfScale[e(3)]);
    }
    return _mm_mul_ps(
        _mm_setr_ps(kE8M0Scale[e(0)], kE8M0Scale[e(1)], kE8M0Scale[e(2)], kE8M0Scale[e(3)]),
        _mm_set1_ps(0.5f));
  } else if constexpr (!L::kScaleInBlock) {
    return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(first)));
  } else {
    uint16_t h[4];
    for (int s = 0; s < 4; ++s) std::memcpy(&h[s], first + stride * s, 2);
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<int64_t>(
        uint64_t{h[0]} | uint64_t{h[1]} << 16 | uint64_t{h[2]} << 32 | uint64_t{h[3]} << 48)));
  }
}

// The last group of a row when it has count < 4 blocks: their nibble bytes
// (block s at 16 s) and scales, zero past count.
struct PartialGroup {
  alignas(64) uint8_t bytes[64] = {};
  alignas(16) float scales[4] = {};

  PartialGroup(const MatrixView& w, uint64_t row, uint64_t g, uint64_t count) {
    for (uint64_t s = 0; s < count; ++s) {
      std::memcpy(bytes + 16 * s, BlockNibbles(w, row, 4 * g + s), 16);
      scales[s] = BlockScale(w.format, BlockScaleBytes(w, row, 4 * g + s));
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
template <class Ops, TensorFormat F, int R, int T>
void Q8Tile(const MatrixView& w, const Q8Activations& x, uint64_t row, size_t t0, float* y,
            size_t y_stride) {
  using L = Layout<F>;
  const uint64_t blocks = w.cols / 32, full_groups = blocks / 4;
  const uint64_t row_bytes = blocks * L::kBlockBytes;
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
    scales[i] = L::kScaleInBlock ? nullptr : w.scale + (row + i) * blocks * L::kScaleBytes;
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
      const char* next =
          reinterpret_cast<const char*>(data[i] + R * row_bytes + g * L::kGroupBytes);
      _mm_prefetch(next, _MM_HINT_T0);
      if constexpr (L::kScaleInBlock) _mm_prefetch(next + 64, _MM_HINT_T0);
      gw[i] = Ops::template LoadFullGroup<F>(data[i], scales[i], g);
    }
    Ops::template Step<L::kFp4, R, T>(gw, tokens, g, 4, acc);
  }
  if (const uint64_t count = blocks % 4; count != 0) {
    typename Ops::GroupWeights gw[R];
    for (int i = 0; i < R; ++i) {
      gw[i] = Ops::LoadPartialGroup(PartialGroup(w, row + i, full_groups, count));
    }
    Ops::template Step<L::kFp4, R, T>(gw, tokens, full_groups, count, acc);
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) y[(t0 + j) * y_stride + row + i] = Ops::Reduce(acc[i][j]);
  }
}

// Every token of rows [row, row + R): tiles of Ops::kTokens, then the rest.
template <class Ops, TensorFormat F, int R>
void Q8Rows(const MatrixView& w, const Q8Activations& x, uint64_t row, float* y, size_t y_stride) {
  size_t t0 = 0;
  for (; t0 + Ops::kTokens <= x.num_tokens; t0 += Ops::kTokens) {
    Q8Tile<Ops, F, R, Ops::kTokens>(w, x, row, t0, y, y_stride);
  }
  const size_t rest = x.num_tokens - t0;
  if constexpr (Ops::kTokens > 3) {
    if (rest == 3) return Q8Tile<Ops, F, R, 3>(w, x, row, t0, y, y_stride);
  }
  if constexpr (Ops::kTokens > 2) {
    if (rest == 2) return Q8Tile<Ops, F, R, 2>(w, x, row, t0, y, y_stride);
  }
  if (rest == 1) Q8Tile<Ops, F, R, 1>(w, x, row, t0, y, y_stride);
}

template <class Ops, TensorFormat F>
void Q8AllRows(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
               float* y, size_t y_stride) {
  uint64_t row = row_begin;
  for (; row + Ops::kRows <= row_end; row += Ops::kRows) {
    Q8Rows<Ops, F, Ops::kRows>(w, x, row, y, y_stride);
  }
  for (; row < row_end; ++row) Q8Rows<Ops, F, 1>(w, x, row, y, y_stride);
}

// MatMulRowsQ8 for one ISA, with its contract (arguments already checked).
template <class Ops>
void MatMulRowsQ8With(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
                      float* y, size_t y_stride) {
  VisitFormat(w.format, [&]<TensorFormat F>() {
    if constexpr (HasQ8Path(F)) Q8AllRows<Ops, F>(w, x, row_begin, row_end, y, y_stride);
  });
}

}  // namespace
}  // namespace warp::kernels::internal
