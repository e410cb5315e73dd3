// The AVX2 kernel of vq3r_matmul.h. This file alone of the vq3r kernels is
// compiled with -mavx2 -mfma -mf16c. One ymm register holds the 8 codes of a
// 32-block, so lanes 0-7 of a block are acc[(b % 2) * 8 + v]: even blocks
// accumulate in `even`, odd ones in `odd`, exactly as the scalar order.

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "computed/kernels/matmul.h"
#include "computed/kernels/vq3r_matmul.h"

namespace warp::computed::kernels::internal {
namespace {

constexpr uint32_t kTableWidth = kVq3rStages * kVq3rEntries;

void BuildTable(const Vq3rCodebook& codebook, const float* x, uint64_t cols, float* table) {
  const float* planar = codebook.planar.data();
  for (uint64_t p = 0; p < cols / kVq3rDim; ++p) {
    const float* xp = x + p * kVq3rDim;
    const __m256 x0 = _mm256_set1_ps(xp[0]), x1 = _mm256_set1_ps(xp[1]);
    const __m256 x2 = _mm256_set1_ps(xp[2]), x3 = _mm256_set1_ps(xp[3]);
    float* tp = table + p * kTableWidth;
    for (uint32_t e = 0; e < kTableWidth; e += 8) {
      __m256 t = _mm256_mul_ps(x0, _mm256_loadu_ps(planar + e));
      t = _mm256_fmadd_ps(x1, _mm256_loadu_ps(planar + kTableWidth + e), t);
      t = _mm256_fmadd_ps(x2, _mm256_loadu_ps(planar + 2 * kTableWidth + e), t);
      t = _mm256_fmadd_ps(x3, _mm256_loadu_ps(planar + 3 * kTableWidth + e), t);
      _mm256_storeu_ps(tp + e, t);
    }
  }
}

// The 8 codes of one block's 12 bytes, one per 32-bit lane (Vq3rCode): lane v
// takes bytes 3 * (v / 2) + v % 2 and the next, shifted right by 4 * (v % 2).
inline __m256i BlockCodes(const std::byte* block) {
  int32_t tail;
  std::memcpy(&tail, block + 8, 4);
  const __m128i bytes =
      _mm_insert_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block)), tail, 2);
  const __m256i both = _mm256_broadcastsi128_si256(bytes);
  const __m256i pairs = _mm256_shuffle_epi8(
      both, _mm256_setr_epi8(0, 1, -1, -1, 1, 2, -1, -1, 3, 4, -1, -1, 4, 5, -1, -1,  //
                             6, 7, -1, -1, 7, 8, -1, -1, 9, 10, -1, -1, 10, 11, -1, -1));
  const __m256i shifted = _mm256_srlv_epi32(pairs, _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
  return _mm256_and_si256(shifted, _mm256_set1_epi32(0xfff));
}

void RowsOfOneToken(const MatrixView& w, const float* table, size_t row_begin, size_t row_end,
                    float* y) {
  const uint64_t cols = w.cols, blocks = cols / kRowBlock, row_bytes = cols / 8 * 3;
  const __m256i lane_base = _mm256_setr_epi32(0, 128, 256, 384, 512, 640, 768, 896);
  const __m256i stage1_base = _mm256_add_epi32(lane_base, _mm256_set1_epi32(kVq3rEntries));
  const __m256i low6 = _mm256_set1_epi32(63);
  for (size_t row = row_begin; row < row_end; ++row) {
    const std::byte* codes = w.data + row * row_bytes;
    const auto* scales = reinterpret_cast<const uint16_t*>(w.scale) + row * blocks;
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
    for (uint64_t b = 0; b < blocks; ++b) {
      const __m256i code = BlockCodes(codes + b * 12);
      const __m256i first = _mm256_add_epi32(lane_base, _mm256_and_si256(code, low6));
      const __m256i second = _mm256_add_epi32(stage1_base, _mm256_srli_epi32(code, 6));
      const float* tb = table + b * 8 * kTableWidth;
      const __m256 sum = _mm256_add_ps(_mm256_i32gather_ps(tb, first, 4),
                                       _mm256_i32gather_ps(tb, second, 4));
      uint16_t half;
      std::memcpy(&half, scales + b, 2);
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(half));
      acc[b % 2] = _mm256_fmadd_ps(d, sum, acc[b % 2]);
    }
    alignas(32) float lanes[16];
    _mm256_store_ps(lanes, acc[0]);
    _mm256_store_ps(lanes + 8, acc[1]);
    y[row] = ReduceLanes(lanes);
  }
}

}  // namespace

void Vq3rMatMulRowsAvx2(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                        size_t row_end, float* y, size_t y_stride) {
  thread_local std::vector<float> table;
  table.resize(w.cols / kVq3rDim * kTableWidth);
  for (size_t t = 0; t < num_tokens; ++t) {
    BuildTable(*w.codebook, x + t * w.cols, w.cols, table.data());
    RowsOfOneToken(w, table.data(), row_begin, row_end, y + t * y_stride);
  }
}

}  // namespace warp::computed::kernels::internal
