// The AVX2 kernel of MatMulRowsQ8 (q8_activations.h). This file alone is
// compiled with -mavx2 -mfma -mf16c.
//
// A group's 16 lanes are two ymm halves: blocks 0-1 (lanes 0-7) and 2-3 (lanes
// 8-15). vpmaddubsw multiplies unsigned weights (q4: the nibble; mxfp4: its
// code + 12, by vpshufb) by signed codes into pairs (|pair| <= 2 * 24 * 127, so
// it never saturates, nor does the sum of the low and high nibbles' pairs),
// vpmaddwd by ones sums them into the lane's int32, and the lane's bias makes
// it the header's exact p.

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/kernels/q8_activations.h"
#include "common/kernels/q8_activations_tile-inl.h"

namespace warp::kernels::internal {
namespace {

struct Avx2Ops {
  struct Acc {
    __m256 half[2];  // lanes 0-7, 8-15
  };
  // A group's 4 blocks of one row: nibble bytes (block s at 16 s; blocks 0-1 in
  // bytes[0], 2-3 in bytes[1]) and dw of each block.
  struct GroupWeights {
    __m256i bytes[2];
    __m128 scales;
  };
  static constexpr int kRows = 2, kTokens = 2;  // 8 accumulator pairs

  static Acc Zero() { return {{_mm256_setzero_ps(), _mm256_setzero_ps()}}; }

  // Step 3: s[i] = acc[i] + acc[i + 8], then the halving tree of matmul.h.
  static float Reduce(const Acc& a) {
    return ReduceEightLanes(_mm256_add_ps(a.half[0], a.half[1]));
  }

  template <TensorFormat F>
  WARP_Q8_INLINE static GroupWeights LoadFullGroup(const std::byte* data, const std::byte* scales,
                                                   uint64_t g) {
    const __m128 dw = GroupScales<F>(data, scales, g);
    if constexpr (Layout<F>::kScaleInBlock) {
      const std::byte* group = data + Layout<F>::kGroupBytes * g;
      const auto at = [&](int s) { return GroupNibbleBytes<F>(group, s); };
      return {{_mm256_set_m128i(at(1), at(0)), _mm256_set_m128i(at(3), at(2))}, dw};
    } else {
      const auto* p = reinterpret_cast<const __m256i*>(data + 64 * g);
      return {{_mm256_loadu_si256(p), _mm256_loadu_si256(p + 1)}, dw};
    }
  }

  static GroupWeights LoadPartialGroup(const PartialGroup& group) {
    return {{_mm256_load_si256(reinterpret_cast<const __m256i*>(group.bytes)),
             _mm256_load_si256(reinterpret_cast<const __m256i*>(group.bytes + 32))},
            _mm_load_ps(group.scales)};
  }

  template <bool kFp4, int R, int T>
  WARP_Q8_INLINE static void Step(const GroupWeights (&gw)[R], const TokenGroups<T>& x, uint64_t g,
                                  uint64_t count, Acc (&acc)[R][T]) {
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i spread[2] = {_mm256_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1),
                               _mm256_setr_epi32(2, 2, 2, 2, 3, 3, 3, 3)};
#pragma GCC unroll 2
    for (int i = 0; i < R; ++i) {
      const __m256 scales256 = _mm256_castps128_ps256(gw[i].scales);
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const uint64_t first_of_half = 2 * static_cast<uint64_t>(h);
        if (count <= first_of_half) continue;
        const bool whole_half = count >= first_of_half + 2;
        __m256i low = _mm256_and_si256(gw[i].bytes[h], low4);
        __m256i high = _mm256_and_si256(_mm256_srli_epi16(gw[i].bytes[h], 4), low4);
        if constexpr (kFp4) {
          const __m256i table = _mm256_broadcastsi128_si256(Fp4Unsigned());
          low = _mm256_shuffle_epi8(table, low);
          high = _mm256_shuffle_epi8(table, high);
        }
        const __m256 dw = _mm256_permutevar8x32_ps(scales256, spread[h]);
#pragma GCC unroll 2
        for (int j = 0; j < T; ++j) {
          const int8_t* codes = x.codes[j] + 128 * g + 32 * h;
          const __m256i pairs = _mm256_add_epi16(
              _mm256_maddubs_epi16(low,
                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes))),
              _mm256_maddubs_epi16(
                  high, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 64))));
          const __m256i p = _mm256_add_epi32(
              _mm256_madd_epi16(pairs, ones),
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bias[j] + 16 * g + 8 * h)));
          const __m256 scale = _mm256_mul_ps(dw, _mm256_loadu_ps(x.lane_scale[j] + 16 * g + 8 * h));
          __m256& half = acc[i][j].half[h];
          const __m256 updated = _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(p), half);
          // A half with one block keeps the lanes of the missing one as they were.
          half = whole_half ? updated : _mm256_blend_ps(half, updated, 0x0f);
        }
      }
    }
  }
};

}  // namespace

void MatMulRowsQ8Avx2(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
                      float* y, size_t y_stride) {
  MatMulRowsQ8With<Avx2Ops>(w, x, row_begin, row_end, y, y_stride);
}

}  // namespace warp::kernels::internal
