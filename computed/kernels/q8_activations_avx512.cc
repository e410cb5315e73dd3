// The AVX-512 VNNI kernel of MatMulRowsQ8 (q8_activations.h). This file alone is
// compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma
// -mf16c; q8_activations.cc calls it only when the CPU has all of them.
//
// One zmm holds the 16 lanes of a group of 4 blocks: its low nibbles in one
// register, its high nibbles in another, and two vpdpbusd (unsigned nibble x
// signed code, 4 products a lane each) on top of the lane's bias give the exact
// integer dot of the header's lane. Then one fma a lane with dw * d.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "computed/kernels/q8_activations.h"

namespace warp::computed::kernels::internal {
namespace {

constexpr uint64_t kBlock = 32;

#define WARP_INLINE inline __attribute__((always_inline))

// A group's 4 blocks of one row: the nibble bytes as 64 unsigned bytes (block s
// at 16 s), the 4 f16 scales in the low 64 bits.
struct GroupWeights {
  __m512i bytes;
  __m128i half_scales;
};

// Group g of a row whose nibbles start at `data` (q4_b32: contiguous, and the
// scales at `scales`; ggml_q4_0: 18-byte blocks of the f16 d then 16 bytes).
template <bool kGgml>
WARP_INLINE GroupWeights LoadFullGroup(const std::byte* data, const std::byte* scales,
                                       uint64_t g) {
  if constexpr (kGgml) {
    const std::byte* block = data + 72 * g;
    const auto at = [&](int s) {
      return _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18 * s + 2));
    };
    __m512i bytes = _mm512_castsi128_si512(at(0));
    bytes = _mm512_inserti32x4(bytes, at(1), 1);
    bytes = _mm512_inserti32x4(bytes, at(2), 2);
    bytes = _mm512_inserti32x4(bytes, at(3), 3);
    // The four d: 16-bit words 0, 9, 18 and 27 of the group's 72 bytes.
    uint16_t h[4];
    for (int s = 0; s < 4; ++s) std::memcpy(&h[s], block + 18 * s, 2);
    const __m128i halves = _mm_cvtsi64_si128(static_cast<int64_t>(
        uint64_t{h[0]} | uint64_t{h[1]} << 16 | uint64_t{h[2]} << 32 | uint64_t{h[3]} << 48));
    return {bytes, halves};
  } else {
    return {_mm512_loadu_si512(data + 64 * g),
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales + 8 * g))};
  }
}

// The last group of a row with count < 4 blocks; the missing ones are zero.
GroupWeights LoadPartialGroup(const MatrixView& w, uint64_t row, uint64_t g, uint64_t count) {
  alignas(64) uint8_t bytes[64] = {};
  alignas(16) uint16_t halves[8] = {};
  for (uint64_t s = 0; s < count; ++s) {
    std::memcpy(bytes + 16 * s, Q4BlockNibbles(w, row, 4 * g + s), 16);
    std::memcpy(&halves[s], Q4BlockHalfScale(w, row, 4 * g + s), 2);
  }
  return {_mm512_load_si512(bytes), _mm_load_si128(reinterpret_cast<const __m128i*>(halves))};
}

// The tile's activations: per token, its group 0; a group further is +128
// codes and +16 lanes.
template <int T>
struct TokenGroups {
  const int8_t* codes[T];
  const int32_t* bias[T];
  const float* lane_scale[T];
};

// One group of R rows x T tokens into acc.
template <int R, int T>
WARP_INLINE void Step(const GroupWeights (&gw)[R], const TokenGroups<T>& x, uint64_t g,
                      __mmask16 lanes, __m512 (&acc)[R][T]) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
#pragma GCC unroll 4
  for (int i = 0; i < R; ++i) {
    const __m512i low = _mm512_and_si512(gw[i].bytes, low4);
    const __m512i high = _mm512_and_si512(_mm512_srli_epi16(gw[i].bytes, 4), low4);
    const __m512 dw =
        _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(_mm_cvtph_ps(gw[i].half_scales)));
#pragma GCC unroll 4
    for (int j = 0; j < T; ++j) {
      const int8_t* codes = x.codes[j] + 128 * g;
      __m512i p = _mm512_loadu_si512(x.bias[j] + 16 * g);
      p = _mm512_dpbusd_epi32(p, low, _mm512_loadu_si512(codes));
      p = _mm512_dpbusd_epi32(p, high, _mm512_loadu_si512(codes + 64));
      const __m512 scale = _mm512_mul_ps(dw, _mm512_loadu_ps(x.lane_scale[j] + 16 * g));
      acc[i][j] = _mm512_mask3_fmadd_ps(scale, _mm512_cvtepi32_ps(p), acc[i][j], lanes);
    }
  }
}

// R rows x T tokens of rows [row, row + R), tokens [t0, t0 + T).
template <bool kGgml, int R, int T>
void Tile(const MatrixView& w, const Q8Activations& x, uint64_t row, size_t t0, float* y,
          size_t y_stride) {
  const uint64_t blocks = w.cols / kBlock, full_groups = blocks / 4;
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
  __m512 acc[R][T];
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) acc[i][j] = _mm512_setzero_ps();
  }
  for (uint64_t g = 0; g < full_groups; ++g) {
    GroupWeights gw[R];
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      // The same group of the row R rows down, which the next tile reads: the
      // hardware prefetchers stop at 4 KiB pages (matmul_driver-inl.h).
      const char* next = reinterpret_cast<const char*>(data[i] + R * row_bytes + g * group_bytes);
      _mm_prefetch(next, _MM_HINT_T0);
      if constexpr (kGgml) _mm_prefetch(next + 64, _MM_HINT_T0);
      gw[i] = LoadFullGroup<kGgml>(data[i], scales[i], g);
    }
    Step<R, T>(gw, tokens, g, 0xffff, acc);
  }
  if (const uint64_t count = blocks % 4; count != 0) {
    GroupWeights gw[R];
    for (int i = 0; i < R; ++i) gw[i] = LoadPartialGroup(w, row + i, full_groups, count);
    Step<R, T>(gw, tokens, full_groups, static_cast<__mmask16>((1u << (4 * count)) - 1), acc);
  }
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < T; ++j) {
      // Step 3: the tree of matmul.h.
      const __m512 a = acc[i][j];
      const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
      const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
      const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
      y[(t0 + j) * y_stride + row + i] = _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
    }
  }
}

template <bool kGgml, int R>
void Rows(const MatrixView& w, const Q8Activations& x, uint64_t row, float* y, size_t y_stride) {
  size_t t0 = 0;
  for (; t0 + 4 <= x.num_tokens; t0 += 4) Tile<kGgml, R, 4>(w, x, row, t0, y, y_stride);
  switch (x.num_tokens - t0) {
    case 3:
      return Tile<kGgml, R, 3>(w, x, row, t0, y, y_stride);
    case 2:
      return Tile<kGgml, R, 2>(w, x, row, t0, y, y_stride);
    case 1:
      return Tile<kGgml, R, 1>(w, x, row, t0, y, y_stride);
    default:
      return;
  }
}

template <bool kGgml>
void AllRows(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
             float* y, size_t y_stride) {
  constexpr uint64_t kRows = 4;  // 16 accumulators at 4 tokens
  uint64_t row = row_begin;
  for (; row + kRows <= row_end; row += kRows) Rows<kGgml, kRows>(w, x, row, y, y_stride);
  for (; row < row_end; ++row) Rows<kGgml, 1>(w, x, row, y, y_stride);
}

#undef WARP_INLINE

}  // namespace

void MatMulRowsQ8Avx512Vnni(const MatrixView& w, const Q8Activations& x, size_t row_begin,
                            size_t row_end, float* y, size_t y_stride) {
  if (w.format == TensorFormat::kGgmlQ4_0) return AllRows<true>(w, x, row_begin, row_end, y, y_stride);
  AllRows<false>(w, x, row_begin, row_end, y, y_stride);
}

}  // namespace warp::computed::kernels::internal
