#include "common/kernels/q8_activations.h"

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/matmul.h"
#include "common/numeric/half.h"
#include "gtest/gtest.h"
#include "tests/computed/kernel_matrices.h"

namespace warp::kernels {
namespace {

using kernel_test::RandomMatrix;
using kernel_test::RandomVector;
using kernel_test::StoredMatrix;

class Q8ActivationsTest : public ::testing::TestWithParam<TensorFormat> {};

// The header's kernels, chosen by hand (MatMulRowsQ8 picks one by ActiveIsa()).
using KernelFn = void (*)(const MatrixView&, const Q8Activations&, size_t, size_t, float*, size_t);
std::vector<std::pair<std::string, KernelFn>> SimdKernels() {
  std::vector<std::pair<std::string, KernelFn>> kernels;
  if (IsaSupported(Isa::kAvx2)) kernels.emplace_back("avx2", internal::MatMulRowsQ8Avx2);
  if (internal::CpuHasAvx512Vnni()) {
    kernels.emplace_back("avx512_vnni", internal::MatMulRowsQ8Avx512Vnni);
  }
  return kernels;
}

bool LowNibbleFirst(TensorFormat format) {
  return format == TensorFormat::kQ4B32 || format == TensorFormat::kMxfp4B32;
}
bool IsMxfp4(TensorFormat format) {
  return format == TensorFormat::kMxfp4B32 || format == TensorFormat::kGgmlMxfp4;
}

// Column e of a block as the weight stores it, as an integer: q4, its nibble -
// 8; mxfp4, twice its E2M1 value (the f32 kernels' value divided by the scale
// below).
int WeightCode(const MatrixView& w, uint64_t row, uint64_t col) {
  const auto* nibbles = reinterpret_cast<const uint8_t*>(internal::BlockNibbles(w, row, col / 32));
  const uint64_t e = col % 32;
  const uint8_t byte = LowNibbleFirst(w.format) ? nibbles[e / 2] : nibbles[e % 16];
  const bool high = LowNibbleFirst(w.format) ? e % 2 == 1 : e >= 16;
  const int nibble = high ? byte >> 4 : byte & 0xf;
  if (!IsMxfp4(w.format)) return nibble - 8;
  static constexpr int kTwiceE2M1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  return kTwiceE2M1[nibble];
}

// The block's scale, as the f32 kernels apply it: f16, or 2^(e - 127) halved
// (for the doubled code above).
float WeightScale(const MatrixView& w, uint64_t row, uint64_t block) {
  const std::byte* at = internal::BlockScaleBytes(w, row, block);
  if (IsMxfp4(w.format)) return std::ldexp(1.0f, static_cast<int>(static_cast<uint8_t>(*at)) - 128);
  uint16_t h;
  std::memcpy(&h, at, 2);
  return HalfToFloat(h);
}

TEST_P(Q8ActivationsTest, QuantizesEachBlockToItsMaximumOver127) {
  const TensorFormat format = GetParam();
  std::vector<float> x(64, 0.0f);
  for (int e = 0; e < 32; ++e) x[e] = 0.25f * static_cast<float>(e - 16);  // amax 4 at e = 0
  x[32 + 5] = std::nanf("");
  Q8Activations q;
  QuantizeActivations(format, x.data(), 1, 64, &q);
  ASSERT_EQ(q.groups, 1u);
  const float* scale = q.LaneScale(0, 0);
  for (int l = 0; l < 4; ++l) EXPECT_EQ(scale[l], 4.0f / 127.0f) << "lane " << l;
  for (int l = 4; l < 8; ++l) EXPECT_TRUE(std::isnan(scale[l])) << "lane " << l;
  for (int l = 8; l < 16; ++l) EXPECT_EQ(scale[l], 0.0f) << "past the last block, lane " << l;
  // Column e of block 0 and its place: ggml keeps columns j, 16 + j under byte
  // j's nibbles; q4_b32 keeps 2j, 2j + 1.
  const int8_t* codes = q.Codes(0, 0);
  int32_t lane0 = 0;
  for (int e = 0; e < 32; ++e) {
    const int expected = static_cast<int>(std::nearbyint(x[e] * (127.0f / 4.0f)));
    const bool high = LowNibbleFirst(format) ? e % 2 == 1 : e >= 16;
    const int byte = LowNibbleFirst(format) ? e / 2 : e % 16;
    EXPECT_EQ(codes[(high ? 64 : 0) + byte], expected) << "column " << e;
    if (byte < 4) lane0 += expected;
  }
  EXPECT_EQ(codes[0], -127);  // column 0, x = -4, in both orders
  EXPECT_EQ(q.Bias(0, 0)[0], (IsMxfp4(format) ? -12 : -8) * lane0);
  for (int i = 16; i < 32; ++i) EXPECT_EQ(codes[i], 0) << "the NaN block is all zero codes";
}

// Codes round to nearest with ties to even, as nearbyint does: a block whose
// amax is 127 scales by exactly 1, so its halves are ties; the other blocks
// are random.
TEST_P(Q8ActivationsTest, CodesAreNearbyintOfTheScaledColumns) {
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(11);
  std::vector<float> x = RandomVector(3 * 256, rng);
  for (int e = 0; e < 32; ++e) x[e] = 0.5f * static_cast<float>(e - 16) + 0.25f * (e % 2);
  x[31] = 127.0f;
  for (int e = 0; e < 31; e += 2) x[e] = static_cast<float>(e - 15) + 0.5f;  // ties
  Q8Activations q;
  QuantizeActivations(format, x.data(), 3, 256, &q);
  for (size_t t = 0; t < 3; ++t) {
    for (uint64_t b = 0; b < 8; ++b) {
      const float* xb = x.data() + t * 256 + 32 * b;
      float amax = 0;
      for (int e = 0; e < 32; ++e) amax = std::max(amax, std::fabs(xb[e]));
      const int8_t* codes = q.Codes(t, b / 4);
      for (int e = 0; e < 32; ++e) {
        const bool high = LowNibbleFirst(format) ? e % 2 == 1 : e >= 16;
        const int byte = 16 * static_cast<int>(b % 4) + (LowNibbleFirst(format) ? e / 2 : e % 16);
        EXPECT_EQ(codes[(high ? 64 : 0) + byte],
                  static_cast<int>(std::nearbyint(xb[e] * (127.0f / amax))))
            << "token " << t << ", block " << b << ", column " << e << ": " << xb[e];
      }
    }
  }
  EXPECT_EQ(q.Codes(0, 0)[0], -14) << "-14.5 rounds to the even -14";
  EXPECT_EQ(q.Codes(0, 0)[LowNibbleFirst(format) ? 1 : 2], -12) << "-12.5 rounds to -12";
}

TEST_P(Q8ActivationsTest, EqualsTheIntegerDotOfEveryBlock) {
  // y = sum over blocks of dw * d * sum(c * q), computed here in double from the
  // weights' nibbles and the quantized codes read back column by column.
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(7);
  const uint64_t rows = 5, cols = 224;  // 7 blocks: a partial last group
  const StoredMatrix m = RandomMatrix(format, rows, cols, rng);
  const std::vector<float> x = RandomVector(2 * cols, rng);
  Q8Activations q;
  QuantizeActivations(format, x.data(), 2, cols, &q);
  std::vector<float> y(2 * rows);
  MatMulRowsQ8(m.View(), q, 0, rows, y.data(), rows);
  for (size_t t = 0; t < 2; ++t) {
    for (uint64_t r = 0; r < rows; ++r) {
      double expected = 0;
      for (uint64_t b = 0; b < cols / 32; ++b) {
        float amax = 0;
        for (uint64_t e = 0; e < 32; ++e)
          amax = std::max(amax, std::fabs(x[t * cols + 32 * b + e]));
        int64_t dot = 0;
        for (uint64_t e = 0; e < 32; ++e) {
          const auto code =
              static_cast<int64_t>(std::nearbyint(x[t * cols + 32 * b + e] * (127.0f / amax)));
          dot += WeightCode(m.View(), r, 32 * b + e) * code;
        }
        expected += double{WeightScale(m.View(), r, b)} * (amax / 127.0f) * dot;
      }
      EXPECT_NEAR(y[t * rows + r], expected, 1e-5 * (1 + std::fabs(expected)))
          << "token " << t << " row " << r;
    }
  }
}

TEST_P(Q8ActivationsTest, StaysNearTheFloatKernel) {
  // The second rounding of the activations is the price: relative error of a
  // dot of 7168 columns, against the f32 kernel, stays under 1%.
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(11);
  const uint64_t rows = 64, cols = 7168;
  const StoredMatrix m = RandomMatrix(format, rows, cols, rng);
  const std::vector<float> x = RandomVector(cols, rng);
  std::vector<float> exact(rows), q8(rows);
  MatMulRows(m.View(), x, 1, 0, rows, exact, rows);
  Q8Activations q;
  QuantizeActivations(format, x.data(), 1, cols, &q);
  MatMulRowsQ8(m.View(), q, 0, rows, q8.data(), rows);
  double err = 0, norm = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    err += (q8[r] - exact[r]) * double{q8[r] - exact[r]};
    norm += exact[r] * double{exact[r]};
  }
  EXPECT_LT(std::sqrt(err / norm), 0.01);
  EXPECT_GT(std::sqrt(err / norm), 0.0) << "the q8 path is not the f32 kernel";
}

TEST_P(Q8ActivationsTest, EverySimdKernelEqualsTheScalarBitForBit) {
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(3);
  ASSERT_FALSE(SimdKernels().empty()) << "no SIMD kernel on this CPU: nothing to compare";
  for (uint64_t cols : {32, 64, 96, 128, 160, 192, 224, 416, 2048}) {
    for (uint64_t rows : {1, 3, 6, 9}) {
      for (size_t tokens : {1, 2, 3, 5, 9}) {
        const StoredMatrix m = RandomMatrix(format, rows, cols, rng);
        std::vector<float> x = RandomVector(tokens * cols, rng);
        if (cols >= 64) std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // an all-zero block
        Q8Activations q;
        QuantizeActivations(format, x.data(), tokens, cols, &q);
        std::vector<float> want(tokens * rows);
        internal::MatMulRowsQ8Scalar(m.View(), q, 0, rows, want.data(), rows);
        for (const auto& [name, kernel] : SimdKernels()) {
          std::vector<float> got(tokens * rows, -1.0f);
          // Rows in two calls: a split must not change a bit.
          kernel(m.View(), q, 0, rows / 2, got.data(), rows);
          kernel(m.View(), q, rows / 2, rows, got.data(), rows);
          EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0)
              << name << " cols " << cols << " rows " << rows << " tokens " << tokens;
        }
      }
    }
  }
}

TEST_P(Q8ActivationsTest, TinySubnormalAndNegativeValuesAgreeAcrossKernels) {
  // Activations below 127 / FLT_MAX (coded as 0), subnormal ones, and weight
  // scales that are f16 subnormals or negative (q4), or E8M0 at its ends
  // (mxfp4: 2^-128, a float subnormal; 2^126, whose products overflow; 255):
  // still the scalar's bits.
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(13);
  const uint64_t rows = 5, cols = 160;
  StoredMatrix m = RandomMatrix(format, rows, cols, rng);
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t b = 0; b < cols / 32; ++b) {
      auto* at = const_cast<std::byte*>(internal::BlockScaleBytes(m.View(), r, b));
      if (IsMxfp4(format)) {
        const uint8_t e = r == 4 && b == 2 ? 255
                          : b % 4 == 0     ? 0
                          : b % 4 == 1     ? 1
                          : b % 4 == 2     ? 127
                                           : 254;
        std::memcpy(at, &e, 1);
      } else {
        const uint16_t half = b % 3 == 0 ? 0x0001 : b % 3 == 1 ? 0x8000 | 0x1c00 : 0x03ff;
        std::memcpy(at, &half, 2);
      }
    }
  }
  std::vector<float> x = RandomVector(2 * cols, rng);
  for (int e = 0; e < 32; ++e) x[e] = 1e-38f * static_cast<float>(e % 5 - 2);  // below the bound
  for (int e = 32; e < 64; ++e) x[e] = 0x1p-140f * static_cast<float>(e % 7 - 3);  // subnormal
  x[cols + 70] = -0.0f;
  Q8Activations q;
  QuantizeActivations(format, x.data(), 2, cols, &q);
  std::vector<float> want(2 * rows);
  internal::MatMulRowsQ8Scalar(m.View(), q, 0, rows, want.data(), rows);
  for (const auto& [name, kernel] : SimdKernels()) {
    std::vector<float> got(2 * rows, -1.0f);
    kernel(m.View(), q, 0, rows, got.data(), rows);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << name;
  }
}

TEST_P(Q8ActivationsTest, AKeptQuantizationIsRedoneWhenTheInputChangesInPlace) {
  // QuantizeActivations returns early for the same bytes: a change at the same
  // address, another format or another token count must be quantized anew.
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(17);
  std::vector<float> x = RandomVector(2 * 64, rng);
  Q8Activations kept;
  QuantizeActivations(format, x.data(), 1, 64, &kept);
  x[3] = 100.0f;  // block 0's amax changes, and so its scale
  QuantizeActivations(format, x.data(), 1, 64, &kept);
  Q8Activations fresh;
  QuantizeActivations(format, x.data(), 1, 64, &fresh);
  EXPECT_EQ(kept.codes, fresh.codes);
  EXPECT_EQ(kept.lane_scale, fresh.lane_scale);
  QuantizeActivations(format, x.data(), 2, 64, &kept);
  EXPECT_EQ(kept.num_tokens, 2u);
  EXPECT_EQ(kept.lane_scale.size(), 2 * kQ8GroupLanes);
  const TensorFormat other =
      format == TensorFormat::kQ4B32 ? TensorFormat::kGgmlQ4_0 : TensorFormat::kQ4B32;
  QuantizeActivations(other, x.data(), 2, 64, &kept);
  Q8Activations other_fresh;
  QuantizeActivations(other, x.data(), 2, 64, &other_fresh);
  EXPECT_EQ(kept.format, other);
  EXPECT_EQ(kept.codes, other_fresh.codes);
  EXPECT_EQ(kept.bias, other_fresh.bias);  // mxfp4_b32 and q4_b32: same places, other offsets
}

TEST_P(Q8ActivationsTest, ABatchEqualsItsTokensOneByOne) {
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(5);
  const uint64_t rows = 7, cols = 384;
  const size_t tokens = 6;
  const StoredMatrix m = RandomMatrix(format, rows, cols, rng);
  const std::vector<float> x = RandomVector(tokens * cols, rng);
  Q8Activations batch;
  QuantizeActivations(format, x.data(), tokens, cols, &batch);
  std::vector<float> together(tokens * rows);
  MatMulRowsQ8(m.View(), batch, 0, rows, together.data(), rows);
  for (size_t t = 0; t < tokens; ++t) {
    Q8Activations one;
    QuantizeActivations(format, x.data() + t * cols, 1, cols, &one);
    std::vector<float> alone(rows);
    MatMulRowsQ8(m.View(), one, 0, rows, alone.data(), rows);
    EXPECT_EQ(std::memcmp(alone.data(), together.data() + t * rows, rows * sizeof(float)), 0)
        << "token " << t;
  }
}

TEST_P(Q8ActivationsTest, ANanActivationGivesNanOutputs) {
  const TensorFormat format = GetParam();
  std::mt19937_64 rng(9);
  const StoredMatrix m = RandomMatrix(format, 2, 64, rng);
  std::vector<float> x = RandomVector(64, rng);
  x[40] = INFINITY;
  Q8Activations q;
  QuantizeActivations(format, x.data(), 1, 64, &q);
  std::vector<float> y(2);
  MatMulRowsQ8(m.View(), q, 0, 2, y.data(), 2);
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
}

INSTANTIATE_TEST_SUITE_P(Formats, Q8ActivationsTest,
                         ::testing::Values(TensorFormat::kQ4B32, TensorFormat::kGgmlQ4_0,
                                           TensorFormat::kMxfp4B32, TensorFormat::kGgmlMxfp4),
                         [](const auto& info) {
                           return std::string(TensorFormatName(info.param));
                         });

TEST(Q8ActivationsPathTest, OnlyFourBitWeightsHaveOne) {
  EXPECT_TRUE(HasQ8Path(TensorFormat::kQ4B32));
  EXPECT_TRUE(HasQ8Path(TensorFormat::kGgmlQ4_0));
  EXPECT_TRUE(HasQ8Path(TensorFormat::kMxfp4B32));
  EXPECT_TRUE(HasQ8Path(TensorFormat::kGgmlMxfp4));
  EXPECT_FALSE(HasQ8Path(TensorFormat::kVq3rB32));
  EXPECT_FALSE(HasQ8Path(TensorFormat::kQ8B32));
  EXPECT_FALSE(HasQ8Path(TensorFormat::kBF16));
  EXPECT_FALSE(HasQ8Path(TensorFormat::kGgmlQ4_K));
}

}  // namespace
}  // namespace warp::kernels
