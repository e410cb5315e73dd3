#include "computed/kernels/vq3r_matmul.h"

#include <cmath>
#include <cstring>
#include <vector>

#include "common/numeric/half.h"
#include "computed/kernels/matmul.h"

namespace warp::computed::kernels::internal {
namespace {

constexpr uint32_t kTableWidth = kVq3rStages * kVq3rEntries;  // entries of T[p]
constexpr uint64_t kCodesPerBlock = kRowBlock / kVq3rDim;

// Step 1 of the summation order for one token.
void BuildTable(const Vq3rCodebook& codebook, const float* x, uint64_t cols, float* table) {
  const float* planar = codebook.planar.data();
  for (uint64_t p = 0; p < cols / kVq3rDim; ++p) {
    const float* xp = x + p * kVq3rDim;
    float* tp = table + p * kTableWidth;
    for (uint32_t e = 0; e < kTableWidth; ++e) {
      float t = xp[0] * planar[e];
      t = std::fma(xp[1], planar[kTableWidth + e], t);
      t = std::fma(xp[2], planar[2 * kTableWidth + e], t);
      tp[e] = std::fma(xp[3], planar[3 * kTableWidth + e], t);
    }
  }
}

}  // namespace

void Vq3rMatMulRowsScalar(const MatrixView& w, const float* x, size_t num_tokens,
                          size_t row_begin, size_t row_end, float* y, size_t y_stride) {
  const uint64_t cols = w.cols, row_bytes = cols / 8 * 3;
  std::vector<float> table(cols / kVq3rDim * kTableWidth);
  for (size_t t = 0; t < num_tokens; ++t) {
    BuildTable(*w.codebook, x + t * cols, cols, table.data());
    for (size_t row = row_begin; row < row_end; ++row) {
      const std::byte* codes = w.data + row * row_bytes;
      const std::byte* scales = w.scale + 2 * row * (cols / kRowBlock);
      float acc[16] = {};
      for (uint64_t b = 0; b < cols / kRowBlock; ++b) {
        uint16_t half;
        std::memcpy(&half, scales + 2 * b, 2);
        const float d = HalfToFloat(half);
        for (uint64_t v = 0; v < kCodesPerBlock; ++v) {
          const uint64_t p = b * kCodesPerBlock + v;
          const uint32_t code = Vq3rCode(codes, p);
          const float* tp = table.data() + p * kTableWidth;
          float& lane = acc[(b % 2) * 8 + v];
          lane = std::fma(d, tp[code & 63] + tp[kVq3rEntries + (code >> 6)], lane);
        }
      }
      y[t * y_stride + row] = ReduceLanes(acc);
    }
  }
}

}  // namespace warp::computed::kernels::internal
