// The converter's q8_b32 / q4_b32 encoder (computed/convert/encode.*) on
// hand-computed blocks: the exact codes and f16 scale bits of small rows
// (all-zero block, negative maximum, ties, a scale rounded in f16, saturating
// codes), and the round trip through the kernels' DequantizeRow, which defines
// what the bytes mean (docs/FORMAT.md#tensor-formats).

#include "computed/convert/encode.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/matrix_view.h"
#include "common/numeric/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp::computed {
namespace {

using ::testing::ElementsAreArray;

constexpr uint16_t kHalfOne = 0x3c00;   // 1.0
constexpr uint16_t kHalfHalf = 0x3800;  // 0.5

// One row (or matrix) encoded: its codes (q4 unpacked to nibble - 8) and scale bits.
struct Encoded {
  TensorFormat format;
  uint64_t rows, cols;
  std::vector<std::byte> data, scale;

  Encoded(TensorFormat f, const std::vector<float>& values, uint64_t c)
      : format(f),
        rows(values.size() / c),
        cols(c),
        data(DataBytes(f, {rows, cols})),
        scale(ScaleBytes(f, {rows, cols})) {
    EncodeRows(format, values, cols, data, scale);
  }

  std::vector<int> Codes() const {
    std::vector<int> codes;
    for (uint64_t i = 0; i < rows * cols; ++i) {
      if (format == TensorFormat::kQ8B32) {
        codes.push_back(static_cast<int8_t>(data[i]));
      } else {
        const auto byte = static_cast<uint8_t>(data[i / 2]);
        codes.push_back((i % 2 == 0 ? byte & 15 : byte >> 4) - 8);
      }
    }
    return codes;
  }
  uint16_t ScaleBits(uint64_t block) const {
    uint16_t bits;
    std::memcpy(&bits, scale.data() + 2 * block, 2);
    return bits;
  }
  std::vector<float> Dequantized(uint64_t row) const {
    std::vector<float> out(cols);
    kernels::DequantizeRow(
        {.format = format, .rows = rows, .cols = cols, .data = data.data(), .scale = scale.data()},
        row, out);
    return out;
  }
};

// A 32-value block: `head` then zeros.
std::vector<float> Block(std::vector<float> head) {
  head.resize(kRowBlock, 0.0f);
  return head;
}
std::vector<int> Codes(std::vector<int> head) {
  head.resize(kRowBlock, 0);
  return head;
}

// The dequantized value of every element is code x the stored scale, exactly.
void ExpectRoundTrip(const Encoded& e) {
  const std::vector<int> codes = e.Codes();
  for (uint64_t row = 0; row < e.rows; ++row) {
    const std::vector<float> values = e.Dequantized(row);
    for (uint64_t c = 0; c < e.cols; ++c) {
      const uint64_t i = row * e.cols + c;
      const float scale = HalfToFloat(e.ScaleBits(i / kRowBlock));
      EXPECT_EQ(std::bit_cast<uint32_t>(values[c]),
                std::bit_cast<uint32_t>(static_cast<float>(codes[i]) * scale))
          << "row " << row << " col " << c;
    }
  }
}

TEST(EncodeQ8Test, ScaleOneRoundsToNearestTiesToEven) {
  // max|x| = 127: scale = 1 exactly, so the codes are x rounded.
  const Encoded e(TensorFormat::kQ8B32,
                  Block({127.0f, -127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 3.49f, 3.51f,
                         100.2f, -99.7f, 0.49f}),
                  kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), kHalfOne);
  EXPECT_THAT(e.Codes(),
              ElementsAreArray(Codes({127, -127, 0, 2, 2, 0, -2, -2, 3, 4, 100, -100, 0})));
  ExpectRoundTrip(e);
}

TEST(EncodeQ8Test, AllZeroBlockHasZeroScaleAndCodes) {
  std::vector<float> values = Block({});
  values[3] = -0.0f;
  const Encoded e(TensorFormat::kQ8B32, values, kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0u);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({})));
  ExpectRoundTrip(e);
  for (float v : e.Dequantized(0)) EXPECT_EQ(v, 0.0f);
}

TEST(EncodeQ8Test, NegativeMaximumSetsTheScaleAndTakesCodeMinus127) {
  // max|x| = 63.5 from a negative value: scale 0.5.
  const Encoded e(TensorFormat::kQ8B32, Block({1.25f, -63.5f, 0.75f, 10.0f, -0.25f}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), kHalfHalf);
  // 1.25 / 0.5 = 2.5 -> 2 (even); 0.75 / 0.5 = 1.5 -> 2; -0.25 / 0.5 = -0.5 -> 0.
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({2, -127, 2, 20, 0})));
  ExpectRoundTrip(e);
}

TEST(EncodeQ8Test, CodesAreRoundedWithTheStoredF16Scale) {
  // max|x| = 1: 1/127 = 0.0078740 stores as f16 0x2008 = 0.0078735 (rounded down), so
  // 62.5/127 divides to 62.504 -> 63, where the exact scale would tie to 62.
  const Encoded e(TensorFormat::kQ8B32, Block({1.0f, 62.5f / 127.0f, -1.0f}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0x2008u);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({127, 63, -127})));
  ExpectRoundTrip(e);
}

TEST(EncodeQ8Test, CodesSaturateWhenTheScaleRoundsDownToAnF16Subnormal) {
  // max|x| / 127 = 1.4 x 2^-24: the f16 scale is the subnormal 2^-24 (code 1), and
  // max|x| / scale = 177.8 saturates at 127 (and -127, never -128).
  const float amax = std::ldexp(1.4f * 127.0f, -24);
  const Encoded e(TensorFormat::kQ8B32,
                  Block({amax, -amax, std::ldexp(100.0f, -24), std::ldexp(0.5f, -24)}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0x0001u);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({127, -127, 100, 0})));
  ExpectRoundTrip(e);
}

TEST(EncodeQ8Test, ABlockTooLargeForAnF16ScaleSaturatesInsteadOfDecodingToNan) {
  // max|x| / 127 above 65504 (the largest f16) must not store an infinite scale:
  // 0 x inf would decode every element of the block to NaN.
  const Encoded e(TensorFormat::kQ8B32, Block({1e7f, -5e6f, 1.0f}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0x7bffu);  // 65504
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({127, -76, 0})));
  for (float v : e.Dequantized(0)) EXPECT_TRUE(std::isfinite(v)) << v;
  ExpectRoundTrip(e);
}

TEST(EncodeQ4Test, ScaleOneCodesAndNibbleOrder) {
  // max|x| = 7: scale 1. Element 2i in the low nibble of byte i, value = nibble - 8.
  const Encoded e(TensorFormat::kQ4B32, Block({7.0f, -7.0f, 0.5f, 1.5f, 2.5f, -3.5f, 6.49f, -6.5f}),
                  kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), kHalfOne);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({7, -7, 0, 2, 2, -4, 6, -6})));
  // Nibbles 15,1 | 8,10 | 10,4 | 14,2 | then 8,8 (code 0).
  std::vector<uint8_t> bytes;
  for (std::byte b : e.data) bytes.push_back(static_cast<uint8_t>(b));
  std::vector<uint8_t> expected = {0x1f, 0xa8, 0x4a, 0x2e};
  expected.resize(kRowBlock / 2, 0x88);
  EXPECT_THAT(bytes, ElementsAreArray(expected));
  ExpectRoundTrip(e);
}

TEST(EncodeQ4Test, AllZeroBlockIsNibbleEight) {
  const Encoded e(TensorFormat::kQ4B32, Block({}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0u);
  for (std::byte b : e.data) EXPECT_EQ(static_cast<uint8_t>(b), 0x88);
  ExpectRoundTrip(e);
}

TEST(EncodeQ4Test, NegativeMaximumTakesCodeMinus7NeverMinus8) {
  // max|x| = 3.5 from a negative value: scale 0.5; -3.5 -> -7 (nibble 1).
  const Encoded e(TensorFormat::kQ4B32, Block({-3.5f, 0.25f, 0.75f, -1.25f, 3.4f}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), kHalfHalf);
  // 0.25/0.5 = 0.5 -> 0; 0.75/0.5 = 1.5 -> 2; -1.25/0.5 = -2.5 -> -2; 3.4/0.5 = 6.8 -> 7.
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({-7, 0, 2, -2, 7})));
  EXPECT_EQ(static_cast<uint8_t>(e.data[0]), 0x81);  // nibbles 1 (code -7), 8 (code 0)
  ExpectRoundTrip(e);
}

TEST(EncodeQ4Test, CodesAreRoundedWithTheStoredF16Scale) {
  // 1/7 = 0.142857 stores as f16 0x3092 = 0.142822 (rounded down): (2.5/7) / scale
  // = 2.5006 -> 3, where the exact scale would tie to 2.
  const Encoded e(TensorFormat::kQ4B32, Block({1.0f, 2.5f / 7.0f, -0.5f}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0x3092u);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({7, 3, -4})));
  ExpectRoundTrip(e);
}

TEST(EncodeQ4Test, CodesSaturateWhenTheScaleRoundsDownToAnF16Subnormal) {
  // max|x| / 7 = 1.4 x 2^-24 -> scale 2^-24; 9.8 and -9.8 saturate at 7 and -7.
  const float amax = std::ldexp(1.4f * 7.0f, -24);
  const Encoded e(TensorFormat::kQ4B32, Block({amax, -amax, std::ldexp(3.0f, -24)}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0x0001u);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({7, -7, 3})));
  ExpectRoundTrip(e);
}

TEST(EncodeQ4Test, ABlockTooLargeForAnF16ScaleSaturatesInsteadOfDecodingToNan) {
  const Encoded e(TensorFormat::kQ4B32, Block({1e6f, -2e5f, 1.0f}), kRowBlock);
  EXPECT_EQ(e.ScaleBits(0), 0x7bffu);
  EXPECT_THAT(e.Codes(), ElementsAreArray(Codes({7, -3, 0})));
  for (float v : e.Dequantized(0)) EXPECT_TRUE(std::isfinite(v)) << v;
  ExpectRoundTrip(e);
}

// Several rows of several blocks: each block has its own scale (row-major
// [rows, cols/32]), and every value comes back within half its block's scale.
TEST(EncodeTest, RowsOfBlocksRoundTripWithinHalfAStep) {
  for (TensorFormat format : {TensorFormat::kQ8B32, TensorFormat::kQ4B32}) {
    const uint64_t rows = 3, cols = 96;
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> values(rows * cols);
    for (uint64_t i = 0; i < values.size(); ++i) {
      values[i] = normal(rng) * static_cast<float>(1 + i / kRowBlock);  // scale differs per block
    }
    const Encoded e(format, values, cols);
    const int max_code = format == TensorFormat::kQ8B32 ? 127 : 7;
    for (uint64_t row = 0; row < rows; ++row) {
      const std::vector<float> back = e.Dequantized(row);
      for (uint64_t c = 0; c < cols; ++c) {
        const uint64_t i = row * cols + c;
        const uint64_t block = i / kRowBlock;
        float amax = 0;
        for (uint64_t j = block * kRowBlock; j < (block + 1) * kRowBlock; ++j) {
          amax = std::max(amax, std::fabs(values[j]));
        }
        EXPECT_EQ(e.ScaleBits(block), FloatToHalf(amax / static_cast<float>(max_code)));
        const float scale = HalfToFloat(e.ScaleBits(block));
        EXPECT_LE(std::fabs(back[c] - values[i]), scale / 2 * (1 + 1e-3f))
            << TensorFormatName(format) << " row " << row << " col " << c;
      }
    }
    ExpectRoundTrip(e);
  }
}

TEST(EncodeTest, HalfFormatsRoundToNearestEven) {
  const std::vector<float> values = {1.0f, -2.5f, 1.0f + 0x1p-11f, 65504.0f, 1e-8f, 3.0f};
  std::vector<std::byte> f16(values.size() * 2), bf16(values.size() * 2);
  EncodeRows(TensorFormat::kF16, values, values.size(), f16, {});
  EncodeRows(TensorFormat::kBF16, values, values.size(), bf16, {});
  const uint16_t want_f16[] = {0x3c00, 0xc100, 0x3c00, 0x7bff, 0x0000, 0x4200};
  const uint16_t want_bf16[] = {0x3f80, 0xc020, 0x3f80, 0x4780, 0x322c, 0x4040};
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t a, b;
    std::memcpy(&a, f16.data() + 2 * i, 2);
    std::memcpy(&b, bf16.data() + 2 * i, 2);
    EXPECT_EQ(a, want_f16[i]) << i;
    EXPECT_EQ(b, want_bf16[i]) << i;
  }
}

}  // namespace
}  // namespace warp::computed
