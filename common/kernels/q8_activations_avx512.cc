// The AVX-512 VNNI kernel of MatMulRowsQ8 (q8_activations.h). This file alone is
// compiled with -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mfma
// -mf16c; q8_activations.cc calls it only when the CPU has all of them.
//
// One zmm holds the 16 lanes of a group of 4 blocks: its low nibbles in one
// register, its high nibbles in another (mxfp4: each through vpshufb to its
// unsigned code), and two vpdpbusd (unsigned weight x signed code, 4 products a
// lane each) on top of the lane's bias give the exact integer dot of the
// header's lane. Then one fma a lane with dw * d.
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*(), which
// -W(maybe-)uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/kernels/q8_activations.h"
#include "common/kernels/q8_activations_tile-inl.h"

namespace warp::kernels::internal {
namespace {

struct Avx512VnniOps {
  using Acc = __m512;
  // A group's 4 blocks of one row: the nibble bytes as 64 unsigned bytes (block
  // s at 16 s), and dw of each block.
  struct GroupWeights {
    __m512i bytes;
    __m128 scales;
  };
  static constexpr int kRows = 4, kTokens = 4;  // 16 accumulators

  static Acc Zero() { return _mm512_setzero_ps(); }

  // Step 3: the tree of matmul.h.
  static float Reduce(const Acc& a) {
    return ReduceEightLanes(_mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)));
  }

  template <TensorFormat F>
  WARP_Q8_INLINE static GroupWeights LoadFullGroup(const std::byte* data, const std::byte* scales,
                                                   uint64_t g) {
    const __m128 dw = GroupScales<F>(data, scales, g);
    if constexpr (Layout<F>::kScaleInBlock) {
      const std::byte* group = data + Layout<F>::kGroupBytes * g;
      const auto at = [&](int s) { return GroupNibbleBytes<F>(group, s); };
      __m512i bytes = _mm512_castsi128_si512(at(0));
      bytes = _mm512_inserti32x4(bytes, at(1), 1);
      bytes = _mm512_inserti32x4(bytes, at(2), 2);
      bytes = _mm512_inserti32x4(bytes, at(3), 3);
      return {bytes, dw};
    } else {
      return {_mm512_loadu_si512(data + 64 * g), dw};
    }
  }

  static GroupWeights LoadPartialGroup(const PartialGroup& group) {
    return {_mm512_load_si512(group.bytes), _mm_load_ps(group.scales)};
  }

  template <bool kFp4, int R, int T>
  WARP_Q8_INLINE static void Step(const GroupWeights (&gw)[R], const TokenGroups<T>& x, uint64_t g,
                                  uint64_t count, Acc (&acc)[R][T]) {
    const __mmask16 lanes = static_cast<__mmask16>((1u << (4 * count)) - 1);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i spread = _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
#pragma GCC unroll 4
    for (int i = 0; i < R; ++i) {
      __m512i low = _mm512_and_si512(gw[i].bytes, low4);
      __m512i high = _mm512_and_si512(_mm512_srli_epi16(gw[i].bytes, 4), low4);
      if constexpr (kFp4) {
        const __m512i table = _mm512_broadcast_i32x4(Fp4Unsigned());
        low = _mm512_shuffle_epi8(table, low);
        high = _mm512_shuffle_epi8(table, high);
      }
      const __m512 dw = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(gw[i].scales));
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
};

}  // namespace

void MatMulRowsQ8Avx512Vnni(const MatrixView& w, const Q8Activations& x, size_t row_begin,
                            size_t row_end, float* y, size_t y_stride) {
  MatMulRowsQ8With<Avx512VnniOps>(w, x, row_begin, row_end, y, y_stride);
}

}  // namespace warp::kernels::internal
