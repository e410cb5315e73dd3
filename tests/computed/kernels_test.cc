#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/matmul.h"
#include "common/kernels/matrix_view.h"
#include "common/numeric/half.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/kernel_matrices.h"

namespace warp {
// Readable parameter names in gtest output.
void PrintTo(TensorFormat format, std::ostream* os) { *os << TensorFormatName(format); }
}  // namespace warp

namespace warp::kernels {
namespace {

using namespace kernel_test;  // NOLINT: the shared test matrices

constexpr uint32_t kSentinelBits = 0x7fbadbad;  // a NaN no kernel produces

std::vector<float> SentinelBuffer(size_t n) {
  return std::vector<float>(n, std::bit_cast<float>(kSentinelBits));
}

// Runs MatMulRows under `isa` into a sentinel-filled [num_tokens, y_stride] buffer.
std::vector<float> RunMatMul(Isa isa, const MatrixView& w, const std::vector<float>& x,
                             size_t num_tokens, size_t row_begin, size_t row_end, size_t y_stride) {
  ScopedIsa scoped(isa);
  std::vector<float> y = SentinelBuffer(num_tokens * y_stride);
  MatMulRows(w, x, num_tokens, row_begin, row_end, y, y_stride);
  return y;
}

// Empty if `got` rows [row_begin, row_end) equal `want` (stride want_stride) bit for bit
// and every other element of `got` is still the sentinel; else the first difference.
std::string CompareRows(const std::vector<float>& got, size_t got_stride,
                        const std::vector<float>& want, size_t want_stride, size_t num_tokens,
                        size_t row_begin, size_t row_end) {
  for (size_t t = 0; t < num_tokens; ++t) {
    for (size_t r = 0; r < got_stride; ++r) {
      const float g = got[t * got_stride + r];
      const bool in_range = r >= row_begin && r < row_end;
      const float w = in_range ? want[t * want_stride + r] : std::bit_cast<float>(kSentinelBits);
      if (std::memcmp(&g, &w, sizeof(float)) != 0) {
        char message[160];
        std::snprintf(message, sizeof(message),
                      "token %zu row %zu: got %.9g (%08x), want %.9g (%08x)", t, r, g,
                      std::bit_cast<uint32_t>(g), w, std::bit_cast<uint32_t>(w));
        return message;
      }
    }
  }
  return "";
}

struct Shape {
  uint64_t rows, cols;
};

// Random shapes a format can store, plus the edge cases of each.
std::vector<Shape> TestShapes(TensorFormat format, std::mt19937_64& rng) {
  std::vector<Shape> shapes;
  auto rows = [&] { return std::uniform_int_distribution<uint64_t>(1, 70)(rng); };
  auto any_cols = [&] { return std::uniform_int_distribution<uint64_t>(1, 300)(rng); };
  switch (format) {
    case TensorFormat::kQ8B32:
    case TensorFormat::kQ4B32:
    case TensorFormat::kMxfp4B32:
    case TensorFormat::kVq3rB32:
    case TensorFormat::kGgmlQ8_0:
    case TensorFormat::kGgmlQ4_0:
    case TensorFormat::kGgmlMxfp4:
      for (uint64_t blocks : {1, 2, 8, 9, 16, 17, 37}) shapes.push_back({rows(), 32 * blocks});
      for (int i = 0; i < 12; ++i) {
        shapes.push_back({rows(), 32 * std::uniform_int_distribution<uint64_t>(1, 40)(rng)});
      }
      break;
    case TensorFormat::kGgmlQ4_1:
    case TensorFormat::kGgmlQ5_0:
    case TensorFormat::kGgmlQ5_1:
    case TensorFormat::kGgmlQ2_K:
    case TensorFormat::kGgmlQ3_K:
    case TensorFormat::kGgmlQ4_K:
    case TensorFormat::kGgmlQ5_K:
    case TensorFormat::kGgmlQ6_K: {
      const uint64_t block = GgmlBlockLayoutOf(format)->elements;
      const uint64_t most = block == 32 ? 40 : 10;  // up to 2560 columns of k-quants
      for (uint64_t blocks : {1, 2, 8, 9}) shapes.push_back({rows(), block * blocks});
      for (int i = 0; i < 10; ++i) {
        shapes.push_back({rows(), block * std::uniform_int_distribution<uint64_t>(1, most)(rng)});
      }
      break;
    }
    case TensorFormat::kF8E4M3B128:
      for (Shape shape :
           {Shape{130, 200}, Shape{200, 130}, Shape{129, 257}, Shape{3, 128}, Shape{5, 7}}) {
        shapes.push_back(shape);
      }
      for (int i = 0; i < 12; ++i) shapes.push_back({rows(), any_cols()});
      break;
    case TensorFormat::kF8E4M3B32:  // partial tiles of rows and columns, a tail chunk
      for (Shape shape :
           {Shape{33, 40}, Shape{40, 33}, Shape{65, 97}, Shape{3, 32}, Shape{5, 7}, Shape{31, 64}}) {
        shapes.push_back(shape);
      }
      for (int i = 0; i < 12; ++i) shapes.push_back({rows(), any_cols()});
      break;
    default:
      for (uint64_t cols : {1, 4, 15, 16, 17, 31, 32, 40}) shapes.push_back({rows(), cols});
      for (int i = 0; i < 12; ++i) shapes.push_back({rows(), any_cols()});
      break;
  }
  return shapes;
}

// ---------------------------------------------------------------------------
// DequantizeRow against hand-computed values.

TEST(DequantizeRowTest, F32IsAsStored) {
  StoredMatrix m(TensorFormat::kF32, 2, 3);
  const float values[6] = {1.5f, -2.25f, 3e-8f, 0.0f, -0.0f, 1e30f};
  for (int i = 0; i < 6; ++i) m.Set(m.data, i, values[i]);
  std::vector<float> row(3);
  DequantizeRow(m.View(), 1, row);
  EXPECT_EQ(std::bit_cast<uint32_t>(row[0]), 0u);
  EXPECT_EQ(std::bit_cast<uint32_t>(row[1]), 0x80000000u);
  EXPECT_EQ(row[2], 1e30f);
}

TEST(DequantizeRowTest, F16IsExact) {
  StoredMatrix m(TensorFormat::kF16, 1, 4);
  const uint16_t codes[4] = {0x3c00, 0xc000, 0x0001, 0x7bff};
  for (int i = 0; i < 4; ++i) m.Set(m.data, i, codes[i]);
  std::vector<float> row(4);
  DequantizeRow(m.View(), 0, row);
  EXPECT_THAT(row, ::testing::ElementsAre(1.0f, -2.0f, 0x1p-24f, 65504.0f));
}

TEST(DequantizeRowTest, Bf16IsTheUpperHalf) {
  StoredMatrix m(TensorFormat::kBF16, 1, 3);
  const uint16_t codes[3] = {0x3f80, 0xc040, 0x0001};
  for (int i = 0; i < 3; ++i) m.Set(m.data, i, codes[i]);
  std::vector<float> row(3);
  DequantizeRow(m.View(), 0, row);
  EXPECT_THAT(row, ::testing::ElementsAre(1.0f, -3.0f, 0x1p-133f));
}

TEST(DequantizeRowTest, E4M3Codes) {
  EXPECT_EQ(E4M3ToFloat(0x00), 0.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(E4M3ToFloat(0x80)), 0x80000000u);  // -0
  EXPECT_EQ(E4M3ToFloat(0x38), 1.0f);                                  // 0 0111 000: 2^0
  EXPECT_EQ(E4M3ToFloat(0xb8), -1.0f);
  EXPECT_EQ(E4M3ToFloat(0x3c), 1.5f);     // 0 0111 100
  EXPECT_EQ(E4M3ToFloat(0x40), 2.0f);     // 0 1000 000
  EXPECT_EQ(E4M3ToFloat(0xc4), -3.0f);    // 1 1000 100: -(1 + 4/8) * 2
  EXPECT_EQ(E4M3ToFloat(0x7e), 448.0f);   // the largest finite
  EXPECT_EQ(E4M3ToFloat(0x08), 0x1p-6f);  // the smallest normal
  EXPECT_EQ(E4M3ToFloat(0x01), 0x1p-9f);  // subnormals: mantissa * 2^-9
  EXPECT_EQ(E4M3ToFloat(0x07), 7 * 0x1p-9f);
  EXPECT_TRUE(std::isnan(E4M3ToFloat(0x7f)));
  EXPECT_TRUE(std::isnan(E4M3ToFloat(0xff)));
}

TEST(DequantizeRowTest, F8UsesTheScaleOfItsBlock) {
  // [130, 130]: scale grid [2, 2] = {0.5, 4, 0.25, 8}.
  StoredMatrix m(TensorFormat::kF8E4M3B128, 130, 130);
  const float scales[4] = {0.5f, 4.0f, 0.25f, 8.0f};
  for (int i = 0; i < 4; ++i) m.Set(m.scale, i, scales[i]);
  auto code = [&](uint64_t r, uint64_t c, uint8_t v) { m.data[r * 130 + c] = std::byte{v}; };
  code(0, 0, 0x38);      // 1.0 * 0.5
  code(0, 127, 0xc4);    // -3 * 0.5
  code(0, 128, 0x01);    // 2^-9 * 4
  code(0, 129, 0x7e);    // 448 * 4
  code(129, 0, 0x40);    // 2 * 0.25
  code(129, 129, 0xb8);  // -1 * 8
  std::vector<float> row(130);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 0.5f);
  EXPECT_EQ(row[127], -1.5f);
  EXPECT_EQ(row[128], 0x1p-7f);
  EXPECT_EQ(row[129], 1792.0f);
  EXPECT_EQ(row[1], 0.0f);
  DequantizeRow(m.View(), 129, row);
  EXPECT_EQ(row[0], 0.5f);
  EXPECT_EQ(row[129], -8.0f);
}

// f8_e4m3_b32: [40, 70] has a scale grid [2, 3], one f32 per 32x32 tile; the
// last tile of a row and of a column is partial.
TEST(DequantizeRowTest, F8B32UsesTheScaleOfItsTile) {
  StoredMatrix m(TensorFormat::kF8E4M3B32, 40, 70);
  ASSERT_EQ(m.scale.size(), 6 * sizeof(float));
  const float scales[6] = {0.5f, 4.0f, 0x1p-20f, 0.25f, 8.0f, 2.0f};
  for (int i = 0; i < 6; ++i) m.Set(m.scale, i, scales[i]);
  auto code = [&](uint64_t r, uint64_t c, uint8_t v) { m.data[r * 70 + c] = std::byte{v}; };
  code(0, 31, 0xc4);   // -3 * 0.5
  code(0, 32, 0x01);   // 2^-9 * 4
  code(0, 63, 0x7e);   // 448 * 4
  code(0, 64, 0x38);   // 1 * 2^-20
  code(0, 69, 0x40);   // 2 * 2^-20
  code(31, 32, 0x3c);  // 1.5 * 4: row 31 is still the first row of tiles
  code(32, 0, 0x40);   // 2 * 0.25
  code(39, 40, 0xb8);  // -1 * 8
  code(39, 69, 0xc4);  // -3 * 2
  std::vector<float> row(70);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[31], -1.5f);
  EXPECT_EQ(row[32], 0x1p-7f);
  EXPECT_EQ(row[63], 1792.0f);
  EXPECT_EQ(row[64], 0x1p-20f);
  EXPECT_EQ(row[69], 0x1p-19f);
  EXPECT_EQ(row[0], 0.0f);
  DequantizeRow(m.View(), 31, row);
  EXPECT_EQ(row[32], 6.0f);
  DequantizeRow(m.View(), 32, row);
  EXPECT_EQ(row[0], 0.5f);
  DequantizeRow(m.View(), 39, row);
  EXPECT_EQ(row[40], -8.0f);
  EXPECT_EQ(row[69], -6.0f);
}

TEST(DequantizeRowTest, Q8IsCodeTimesBlockScale) {
  StoredMatrix m(TensorFormat::kQ8B32, 1, 64);
  m.Set(m.scale, 0, uint16_t{0x3800});  // 0.5
  m.Set(m.scale, 1, uint16_t{0x4000});  // 2.0
  m.data[0] = std::byte{0x80};          // -128
  m.data[31] = std::byte{0x7f};         // 127
  m.data[32] = std::byte{0xff};         // -1
  m.data[63] = std::byte{0x03};
  std::vector<float> row(64);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], -64.0f);
  EXPECT_EQ(row[31], 63.5f);
  EXPECT_EQ(row[32], -2.0f);
  EXPECT_EQ(row[63], 6.0f);
  EXPECT_EQ(row[1], 0.0f);
}

TEST(DequantizeRowTest, Q4LowNibbleFirstMinusEight) {
  StoredMatrix m(TensorFormat::kQ4B32, 1, 64);
  m.Set(m.scale, 0, uint16_t{0x3800});              // 0.5
  m.Set(m.scale, 1, uint16_t{0x4000});              // 2.0
  for (std::byte& b : m.data) b = std::byte{0x88};  // both nibbles 8: zero
  m.data[0] = std::byte{0x9a};                      // elements 0 (low 0xa) and 1 (high 0x9)
  m.data[15] = std::byte{0x0f};                     // elements 30 (0xf) and 31 (0x0)
  m.data[16] = std::byte{0x80};                     // elements 32 (0x0) and 33 (0x8)
  std::vector<float> row(64);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 1.0f);     // (10 - 8) * 0.5
  EXPECT_EQ(row[1], 0.5f);     // (9 - 8) * 0.5
  EXPECT_EQ(row[30], 3.5f);    // (15 - 8) * 0.5
  EXPECT_EQ(row[31], -4.0f);   // (0 - 8) * 0.5
  EXPECT_EQ(row[32], -16.0f);  // (0 - 8) * 2
  EXPECT_EQ(row[33], 0.0f);
  EXPECT_EQ(row[2], 0.0f);
}

TEST(DequantizeRowTest, Fp4AndE8M0Tables) {
  const float fp4[16] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0.0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};
  for (int n = 0; n < 16; ++n) {
    EXPECT_EQ(std::bit_cast<uint32_t>(kFp4Value[n]), std::bit_cast<uint32_t>(fp4[n])) << n;
  }
  EXPECT_EQ(std::bit_cast<uint32_t>(kE8M0Scale[0]), 0x00400000u);  // 2^-127, a subnormal
  EXPECT_EQ(kE8M0Scale[0], 0x1p-127f);
  EXPECT_EQ(kE8M0Scale[1], 0x1p-126f);
  EXPECT_EQ(kE8M0Scale[127], 1.0f);
  EXPECT_EQ(kE8M0Scale[130], 8.0f);
  EXPECT_EQ(kE8M0Scale[254], 0x1p127f);
  EXPECT_EQ(std::bit_cast<uint32_t>(kE8M0Scale[255]), 0x7fc00000u);  // NaN
}

TEST(DequantizeRowTest, Mxfp4LowNibbleFirstTimesPowerOfTwo) {
  StoredMatrix m(TensorFormat::kMxfp4B32, 2, 64);
  const uint8_t scales[4] = {127, 0, 1, 254};  // 1, 2^-127, 2^-126, 2^127
  for (int i = 0; i < 4; ++i) m.scale[i] = std::byte{scales[i]};
  m.data[0] = std::byte{0xf1};   // elements 0 (low 0x1: 0.5) and 1 (high 0xf: -6)
  m.data[15] = std::byte{0x87};  // elements 30 (0x7: 6) and 31 (0x8: -0)
  m.data[16] = std::byte{0x92};  // elements 32 (0x2: 1) and 33 (0x9: -0.5)
  m.data[32] = std::byte{0x3a};  // row 1: elements 0 (0xa: -1) and 1 (0x3: 1.5)
  m.data[48] = std::byte{0x74};  // row 1: elements 32 (0x4: 2) and 33 (0x7: 6)
  m.data[49] = std::byte{0x0b};  // row 1: elements 34 (0xb: -1.5) and 35 (0)
  std::vector<float> row(64);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 0.5f);
  EXPECT_EQ(row[1], -6.0f);
  EXPECT_EQ(row[30], 6.0f);
  EXPECT_EQ(std::bit_cast<uint32_t>(row[31]), 0x80000000u);  // -0 keeps its sign
  EXPECT_EQ(row[32], 0x1p-127f);                             // 1 * 2^-127: subnormal, exact
  EXPECT_EQ(row[33], -0x1p-128f);
  EXPECT_EQ(row[2], 0.0f);
  DequantizeRow(m.View(), 1, row);
  EXPECT_EQ(row[0], -0x1p-126f);
  EXPECT_EQ(row[1], 1.5f * 0x1p-126f);
  EXPECT_EQ(row[32], INFINITY);  // 2 * 2^127 overflows, as one float multiply does
  EXPECT_EQ(row[33], INFINITY);
  EXPECT_EQ(row[34], -1.5f * 0x1p127f);  // the largest finite magnitude mxfp4 holds
  EXPECT_EQ(row[35], 0.0f);
  m.scale[0] = std::byte{255};
  DequantizeRow(m.View(), 0, row);
  EXPECT_TRUE(std::isnan(row[0]) && std::isnan(row[31]));
  EXPECT_EQ(row[32], 0x1p-127f);
}

// ---------------------------------------------------------------------------
// ISA selection and the summation order.

// ggml's blocks as ggml-quants.c dequantize_row_q8_0 / _q4_0 / _mxfp4 read them.
TEST(DequantizeRowTest, GgmlQ8_0IsCodeTimesItsBlocksHalf) {
  StoredMatrix m(TensorFormat::kGgmlQ8_0, 1, 64);
  ASSERT_EQ(m.data.size(), 68u);
  m.Set(m.data, 0, FloatToHalf(0.5f));
  m.Set(m.data, 17, FloatToHalf(-2.0f));  // bytes 34-35: block 1's d
  for (int i = 0; i < 32; ++i) {
    m.data[2 + i] = std::byte{static_cast<uint8_t>(i - 16)};
    m.data[36 + i] = std::byte{static_cast<uint8_t>(i)};
  }
  std::vector<float> row(64);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], -8.0f);
  EXPECT_EQ(row[31], 7.5f);
  EXPECT_EQ(row[32], 0.0f);
  EXPECT_EQ(row[63], -62.0f);
}

TEST(DequantizeRowTest, GgmlQ4_0LowNibblesThenHighNibbles) {
  StoredMatrix m(TensorFormat::kGgmlQ4_0, 1, 32);
  ASSERT_EQ(m.data.size(), 18u);
  m.Set(m.data, 0, FloatToHalf(0.25f));
  for (int i = 0; i < 16; ++i) m.data[2 + i] = std::byte{static_cast<uint8_t>(i | (15 - i) << 4)};
  std::vector<float> row(32);
  DequantizeRow(m.View(), 0, row);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(row[i], (i - 8) * 0.25f) << i;             // low nibble of byte i
    EXPECT_EQ(row[16 + i], (7 - i) * 0.25f) << 16 + i;   // high nibble of byte i
  }
}

TEST(DequantizeRowTest, GgmlMxfp4DoubledTableTimesHalfScale) {
  StoredMatrix m(TensorFormat::kGgmlMxfp4, 1, 64);
  ASSERT_EQ(m.data.size(), 34u);
  m.data[0] = std::byte{127};   // 2^-1: the doubled table times it is E2M1
  m.data[17] = std::byte{255};  // 2^127 in ggml (not NaN)
  for (int i = 0; i < 16; ++i) {
    m.data[1 + i] = std::byte{static_cast<uint8_t>(i | (15 - i) << 4)};
    m.data[18 + i] = std::byte{0x01};  // elements 0-15: nibble 1, 16-31: nibble 0
  }
  std::vector<float> row(64);
  DequantizeRow(m.View(), 0, row);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(row[i], kFp4Value[i] == 0 ? 0.0f : kFp4Value[i]) << i;
    EXPECT_EQ(row[16 + i], kFp4Value[15 - i] == 0 ? 0.0f : kFp4Value[15 - i]) << 16 + i;
  }
  EXPECT_FALSE(std::signbit(row[8]));  // nibble 8 is +0 in ggml's table
  EXPECT_EQ(row[32], 0x1p127f);        // 1 (doubled 0.5) x 2^127
  EXPECT_EQ(row[48], 0.0f);
}

// The other ggml blocks, by hand from ggml-quants.c dequantize_row_q4_1 /
// _q5_0 / _q5_1 / _q2_K / _q3_K / _q4_K / _q5_K / _q6_K. Unset bytes are 0.
TEST(DequantizeRowTest, GgmlQ4_1NibbleTimesDPlusM) {
  StoredMatrix m(TensorFormat::kGgmlQ4_1, 1, 32);
  ASSERT_EQ(m.data.size(), 20u);
  m.Set(m.data, 0, FloatToHalf(0.25f));  // d
  m.Set(m.data, 1, FloatToHalf(2.0f));   // m
  for (int i = 0; i < 16; ++i) m.data[4 + i] = std::byte{static_cast<uint8_t>(i | (15 - i) << 4)};
  std::vector<float> row(32);
  DequantizeRow(m.View(), 0, row);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(row[i], i * 0.25f + 2) << i;                 // low nibble of byte i
    EXPECT_EQ(row[16 + i], (15 - i) * 0.25f + 2) << 16 + i;  // its high nibble
  }
}

TEST(DequantizeRowTest, GgmlQ5_0HighBitFromQh) {
  StoredMatrix m(TensorFormat::kGgmlQ5_0, 1, 32);
  ASSERT_EQ(m.data.size(), 22u);
  m.Set(m.data, 0, FloatToHalf(0.5f));
  const uint32_t qh = 1u | 1u << 16 | 1u << 31;  // elements 0, 16, 31
  std::memcpy(m.data.data() + 2, &qh, sizeof(qh));
  m.data[6] = std::byte{0x3f};   // element 0: 15, element 16: 3
  m.data[21] = std::byte{0x80};  // element 15: 0, element 31: 8
  std::vector<float> row(32);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 7.5f);   // (15 + 16 - 16) * 0.5
  EXPECT_EQ(row[16], 1.5f);  // (3 + 16 - 16) * 0.5
  EXPECT_EQ(row[1], -8.0f);  // (0 - 16) * 0.5
  EXPECT_EQ(row[15], -8.0f);
  EXPECT_EQ(row[31], 4.0f);  // (8 + 16 - 16) * 0.5
}

TEST(DequantizeRowTest, GgmlQ5_1CodeTimesDPlusM) {
  StoredMatrix m(TensorFormat::kGgmlQ5_1, 1, 32);
  ASSERT_EQ(m.data.size(), 24u);
  m.Set(m.data, 0, FloatToHalf(0.5f));
  m.Set(m.data, 1, FloatToHalf(-1.0f));
  const uint32_t qh = 1u | 1u << 16 | 1u << 31;
  std::memcpy(m.data.data() + 4, &qh, sizeof(qh));
  m.data[8] = std::byte{0x3f};
  m.data[23] = std::byte{0x80};
  std::vector<float> row(32);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 14.5f);  // 31 * 0.5 - 1
  EXPECT_EQ(row[16], 8.5f);  // 19 * 0.5 - 1
  EXPECT_EQ(row[1], -1.0f);
  EXPECT_EQ(row[31], 11.0f);  // 24 * 0.5 - 1
}

TEST(DequantizeRowTest, GgmlQ2_KScaleAndMinPerSixteen) {
  StoredMatrix m(TensorFormat::kGgmlQ2_K, 1, 256);
  ASSERT_EQ(m.data.size(), 84u);
  m.Set(m.data, 40, FloatToHalf(0.5f));   // bytes 80-81: d
  m.Set(m.data, 41, FloatToHalf(0.25f));  // bytes 82-83: dmin
  m.data[0] = std::byte{0x23};            // elements 0-15: scale 3, min 2
  m.data[2] = std::byte{0x14};            // elements 32-47: scale 4, min 1
  m.data[15] = std::byte{0xf1};           // elements 240-255: scale 1, min 15
  m.data[16 + 0] = std::byte{0x07};       // element 0: bits 0-1 (3), element 32: bits 2-3 (1)
  m.data[16 + 63] = std::byte{0xc0};      // element 255 (half 1, t 31): bits 6-7 (3)
  std::vector<float> row(256);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 4.0f);     // 0.5 * 3 * 3 - 0.25 * 2
  EXPECT_EQ(row[1], -0.5f);    // code 0
  EXPECT_EQ(row[32], 1.75f);   // 0.5 * 4 * 1 - 0.25 * 1
  EXPECT_EQ(row[16], 0.0f);    // scale and min 0
  EXPECT_EQ(row[255], -2.25f);  // 0.5 * 1 * 3 - 0.25 * 15
}

TEST(DequantizeRowTest, GgmlQ3_KSixBitScalesAndHighBitMask) {
  StoredMatrix m(TensorFormat::kGgmlQ3_K, 1, 256);
  ASSERT_EQ(m.data.size(), 110u);
  m.Set(m.data, 54, FloatToHalf(0.5f));  // bytes 108-109: d
  m.data[96 + 0] = std::byte{0x15};      // scale 0 low bits 5, scale 8 low bits 1
  m.data[96 + 8] = std::byte{0x32};      // scale 0 high bits 2, scale 8 high bits 3
  m.data[96 + 5] = std::byte{0xf0};      // scale 13 low bits 15
  m.data[96 + 9] = std::byte{0x40};      // scale 13 high bits 1
  m.data[0] = std::byte{0x11};           // hmask[0]: element 0 (bit 0), element 128 (bit 4)
  m.data[32 + 0] = std::byte{0x03};      // element 0: 3
  m.data[32 + 32] = std::byte{0x02};     // element 128 (half 1): 2
  m.data[32 + 48] = std::byte{0x10};     // element 208 (half 1, k 2, t 16): bits 4-5 = 1
  std::vector<float> row(256);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 7.5f);     // 0.5 * (37 - 32) * 3
  EXPECT_EQ(row[1], -10.0f);   // 0.5 * 5 * (0 - 4): its hmask bit is clear
  EXPECT_EQ(row[128], 17.0f);  // 0.5 * (49 - 32) * 2
  EXPECT_EQ(row[208], 1.5f);   // 0.5 * (31 - 32) * (1 - 4)
}

// Sub-blocks 0, 1 (6-bit scales and mins in bytes 0-7) and 5 (nibbles of byte
// 9 under the top bits of bytes 1 and 5) of a q4_K / q5_K super-block.
void SetQ4KScales(StoredMatrix& m) {
  m.Set(m.data, 0, FloatToHalf(0.5f));   // d
  m.Set(m.data, 1, FloatToHalf(0.25f));  // dmin
  m.data[4 + 0] = std::byte{3};          // sub-block 0: scale 3
  m.data[4 + 4] = std::byte{2};          // sub-block 0: min 2
  m.data[4 + 1] = std::byte{0xc1};       // sub-block 1: scale 1; sub-block 5's scale + 48
  m.data[4 + 5] = std::byte{0x44};       // sub-block 1: min 4; sub-block 5's min + 16
  m.data[4 + 9] = std::byte{0x27};       // sub-block 5: scale 7 + 48, min 2 + 16
}

TEST(DequantizeRowTest, GgmlQ4_KSubBlockScalesAndMins) {
  StoredMatrix m(TensorFormat::kGgmlQ4_K, 1, 256);
  ASSERT_EQ(m.data.size(), 144u);
  SetQ4KScales(m);
  m.data[16 + 0] = std::byte{0x9f};   // element 0 (low nibble): 15, element 32 (high): 9
  m.data[16 + 64] = std::byte{0x50};  // element 128 (low): 0, element 160 (high): 5
  std::vector<float> row(256);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 22.0f);    // 0.5 * 3 * 15 - 0.25 * 2
  EXPECT_EQ(row[1], -0.5f);    // code 0
  EXPECT_EQ(row[32], 3.5f);    // 0.5 * 1 * 9 - 0.25 * 4
  EXPECT_EQ(row[128], 0.0f);   // sub-block 4: scale and min 0
  EXPECT_EQ(row[160], 133.0f);  // 0.5 * 55 * 5 - 0.25 * 18
}

TEST(DequantizeRowTest, GgmlQ5_KHighBitPerSubBlock) {
  StoredMatrix m(TensorFormat::kGgmlQ5_K, 1, 256);
  ASSERT_EQ(m.data.size(), 176u);
  SetQ4KScales(m);
  m.data[16 + 0] = std::byte{0x21};   // qh[0]: bit 0 (element 0), bit 5 (element 160)
  m.data[16 + 1] = std::byte{0x02};   // qh[1]: bit 1 (element 33)
  m.data[48 + 0] = std::byte{0x9f};   // element 0: 15, element 32: 9
  m.data[48 + 64] = std::byte{0x50};  // element 160: 5
  std::vector<float> row(256);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 46.0f);    // 0.5 * 3 * 31 - 0.25 * 2
  EXPECT_EQ(row[1], -0.5f);
  EXPECT_EQ(row[32], 3.5f);    // no high bit: 0.5 * 1 * 9 - 1
  EXPECT_EQ(row[33], 7.0f);    // 0.5 * 1 * 16 - 1
  EXPECT_EQ(row[160], 573.0f);  // 0.5 * 55 * 21 - 0.25 * 18
}

TEST(DequantizeRowTest, GgmlQ6_KLowNibblesHighPairsInt8Scales) {
  StoredMatrix m(TensorFormat::kGgmlQ6_K, 1, 256);
  ASSERT_EQ(m.data.size(), 210u);
  m.Set(m.data, 104, FloatToHalf(0.5f));  // bytes 208-209: d
  const int8_t scales[16] = {2, 0, -1, 0, 4, -3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  for (int i = 0; i < 16; ++i) m.data[192 + i] = std::byte{static_cast<uint8_t>(scales[i])};
  m.data[0] = std::byte{0x3a};          // ql[0]: element 0 (low) 10, element 64 (high) 3
  m.data[32] = std::byte{0x05};         // ql[32]: element 32 (low) 5, element 96 (high) 0
  m.data[16] = std::byte{0xf0};         // ql[16]: element 80 (high) 15
  m.data[127] = std::byte{0x10};        // ql[127]: element 255 (half 1, high) 1
  m.data[128 + 0] = std::byte{0x9e};    // qh[0]: elements 0, 32, 64, 96: 2, 3, 1, 2
  m.data[128 + 16] = std::byte{0x30};   // qh[16]: element 80: 3
  std::vector<float> row(256);
  DequantizeRow(m.View(), 0, row);
  EXPECT_EQ(row[0], 10.0f);    // 0.5 * 2 * (42 - 32)
  EXPECT_EQ(row[32], -10.5f);  // 0.5 * -1 * (53 - 32)
  EXPECT_EQ(row[64], -26.0f);  // 0.5 * 4 * (19 - 32)
  EXPECT_EQ(row[96], 0.0f);    // (32 - 32)
  EXPECT_EQ(row[80], -46.5f);  // 0.5 * -3 * (63 - 32)
  EXPECT_EQ(row[255], -15.5f);  // 0.5 * 1 * (1 - 32)
  EXPECT_EQ(row[1], -32.0f);   // 0.5 * 2 * (0 - 32)
}

// vq3r_b32, packed by hand: code p of the row is i | j << 6 with i = p, j = 63 - p,
// two codes per 3 bytes, the even one in the low 12 bits; element 4p + k is
// (C0[i][k] + C1[j][k]) * scale of its 32-block.
StoredMatrix HandVq3rRow() {
  StoredMatrix w(TensorFormat::kVq3rB32, 1, 64);
  for (uint32_t e = 0; e < 64; ++e) {
    for (uint32_t k = 0; k < 4; ++k) {
      w.codebook.centroids[e * 4 + k] = static_cast<float>(e) + 0.25f * static_cast<float>(k);
      w.codebook.centroids[(64 + e) * 4 + k] = -0.5f * static_cast<float>(e);
    }
  }
  w.codebook.ComputeSums();
  for (uint32_t pair = 0; pair < 8; ++pair) {
    const uint32_t a = (2 * pair) | (63 - 2 * pair) << 6, b = (2 * pair + 1) | (62 - 2 * pair) << 6;
    w.data[3 * pair] = std::byte{static_cast<uint8_t>(a & 0xff)};
    w.data[3 * pair + 1] = std::byte{static_cast<uint8_t>(a >> 8 | (b & 0xf) << 4)};
    w.data[3 * pair + 2] = std::byte{static_cast<uint8_t>(b >> 4)};
  }
  w.Set(w.scale, 0, uint16_t{0x3800});  // 0.5
  w.Set(w.scale, 1, uint16_t{0x4000});  // 2
  return w;
}

TEST(DequantizeRowTest, Vq3rSumsTheTwoStagesTimesTheBlockScale) {
  const StoredMatrix w = HandVq3rRow();
  std::vector<float> row(64);
  DequantizeRow(w.View(), 0, row);
  for (uint32_t c = 0; c < 64; ++c) {
    const uint32_t p = c / 4, k = c % 4;
    const float want = (static_cast<float>(p) + 0.25f * static_cast<float>(k) -
                        0.5f * static_cast<float>(63 - p)) *
                       (c < 32 ? 0.5f : 2.0f);
    EXPECT_EQ(row[c], want) << "column " << c;
  }
}

// vq3r_b32 follows the one summation order of matmul.h over DequantizeRow's weights.
TEST(MatMulHandTest, Vq3rDot) {
  const StoredMatrix w = HandVq3rRow();
  std::vector<float> x(64), row(64);
  for (int c = 0; c < 64; ++c) x[c] = 0.5f + static_cast<float>(c % 5);
  DequantizeRow(w.View(), 0, row);
  float acc[16] = {};
  for (int c = 0; c < 64; ++c) acc[c % 16] = std::fma(row[c], x[c], acc[c % 16]);
  const float want = internal::ReduceLanes(acc);
  for (Isa isa : SupportedIsas()) {
    EXPECT_EQ(RunMatMul(isa, w.View(), x, 1, 0, 1, 1)[0], want) << IsaName(isa);
  }
}

TEST(IsaTest, DetectionAndNames) {
  EXPECT_EQ(IsaName(Isa::kScalar), "scalar");
  EXPECT_EQ(IsaName(Isa::kAvx2), "avx2");
  EXPECT_EQ(IsaName(Isa::kAvx512), "avx512");
  EXPECT_TRUE(IsaSupported(Isa::kScalar));
  EXPECT_TRUE(IsaSupported(DetectIsa()));
  EXPECT_EQ(ActiveIsa(), DetectIsa());
  {
    ScopedIsa scoped(Isa::kScalar);
    EXPECT_EQ(ActiveIsa(), Isa::kScalar);
  }
  EXPECT_EQ(ActiveIsa(), DetectIsa());
  std::printf("[          ] ISAs tested here:");
  for (Isa isa : SupportedIsas()) std::printf(" %s", std::string(IsaName(isa)).c_str());
  std::printf("\n");
}

StoredMatrix F32Row(const std::vector<float>& values) {
  StoredMatrix m(TensorFormat::kF32, 1, values.size());
  for (size_t i = 0; i < values.size(); ++i) m.Set(m.data, i, values[i]);
  return m;
}

// 17 columns: lane 0 gets columns 0 and 16, so 1e8 cancels before the ones of
// lanes 1..15 are added (a left-to-right sum would give 0).
TEST(SummationOrderTest, SixteenLanesByColumn) {
  const StoredMatrix w = F32Row(std::vector<float>(17, 1.0f));
  std::vector<float> x(17, 1.0f);
  x[0] = 1e8f;
  x[16] = -1e8f;
  for (Isa isa : SupportedIsas()) {
    EXPECT_EQ(RunMatMul(isa, w.View(), x, 1, 0, 1, 1)[0], 15.0f) << IsaName(isa);
  }
}

// Lanes 0 and 8 meet first in the tree: 2^24 and -2^24 cancel exactly and the
// ones of lanes 1 and 9 survive (a sequential or pairwise sum would give 1).
TEST(SummationOrderTest, FixedReductionTree) {
  const StoredMatrix w = F32Row(std::vector<float>(16, 1.0f));
  std::vector<float> x(16, 0.0f);
  x[0] = 0x1p24f;
  x[1] = 1.0f;
  x[8] = -0x1p24f;
  x[9] = 1.0f;
  for (Isa isa : SupportedIsas()) {
    EXPECT_EQ(RunMatMul(isa, w.View(), x, 1, 0, 1, 1)[0], 2.0f) << IsaName(isa);
  }
}

// A dot product by hand: q4 row of nibble 9 and 10 alternating (+1, +2 times
// scale 0.5) against x = 1..64.
TEST(MatMulHandTest, Q4Dot) {
  StoredMatrix w(TensorFormat::kQ4B32, 1, 64);
  for (std::byte& b : w.data) b = std::byte{0xa9};  // low nibble 9, high nibble 10
  w.Set(w.scale, 0, uint16_t{0x3800});
  w.Set(w.scale, 1, uint16_t{0x3800});
  std::vector<float> x(64);
  float want = 0;
  for (int c = 0; c < 64; ++c) {
    x[c] = static_cast<float>(c + 1);
    want += (c % 2 == 0 ? 0.5f : 1.0f) * x[c];  // exact: small integers and halves
  }
  for (Isa isa : SupportedIsas()) {
    EXPECT_EQ(RunMatMul(isa, w.View(), x, 1, 0, 1, 1)[0], want) << IsaName(isa);
  }
}

// An mxfp4 row: nibbles 0x2 and 0xb alternating (+1, -1.5 times 2^-1) against x = 1..64.
TEST(MatMulHandTest, Mxfp4Dot) {
  StoredMatrix w(TensorFormat::kMxfp4B32, 1, 64);
  for (std::byte& b : w.data) b = std::byte{0xb2};
  w.scale[0] = w.scale[1] = std::byte{126};
  std::vector<float> x(64);
  float want = 0;
  for (int c = 0; c < 64; ++c) {
    x[c] = static_cast<float>(c + 1);
    want += (c % 2 == 0 ? 0.5f : -0.75f) * x[c];  // exact: small multiples of 1/4
  }
  for (Isa isa : SupportedIsas()) {
    EXPECT_EQ(RunMatMul(isa, w.View(), x, 1, 0, 1, 1)[0], want) << IsaName(isa);
  }
}

// ---------------------------------------------------------------------------
// Every format x every ISA.

class MatMulTest : public ::testing::TestWithParam<TensorFormat> {
 protected:
  std::mt19937_64 rng_{0x5eed0000u + static_cast<unsigned>(GetParam())};

  size_t RandomTokens() { return std::uniform_int_distribution<size_t>(1, 9)(rng_); }
  std::pair<size_t, size_t> RandomRange(uint64_t rows) {
    size_t a = std::uniform_int_distribution<size_t>(0, rows)(rng_);
    size_t b = std::uniform_int_distribution<size_t>(0, rows)(rng_);
    if (a > b) std::swap(a, b);
    if (a == b) return {0, rows};
    return {a, b};
  }
};

TEST_P(MatMulTest, SimdEqualsScalarBitForBit) {
  for (const Shape& shape : TestShapes(GetParam(), rng_)) {
    SCOPED_TRACE("shape [" + std::to_string(shape.rows) + ", " + std::to_string(shape.cols) + "]");
    const StoredMatrix w = RandomMatrix(GetParam(), shape.rows, shape.cols, rng_);
    const size_t tokens = RandomTokens();
    const std::vector<float> x = RandomVector(tokens * shape.cols, rng_);
    std::vector<float> want = SentinelBuffer(tokens * shape.rows);
    internal::MatMulRowsScalar(w.View(), x.data(), tokens, 0, shape.rows, want.data(), shape.rows);
    for (Isa isa : SupportedIsas()) {
      const auto [begin, end] = RandomRange(shape.rows);
      const size_t stride = shape.rows + std::uniform_int_distribution<size_t>(0, 3)(rng_);
      SCOPED_TRACE(std::string(IsaName(isa)) + " tokens " + std::to_string(tokens) + " rows [" +
                   std::to_string(begin) + ", " + std::to_string(end) + ")");
      const std::vector<float> got = RunMatMul(isa, w.View(), x, tokens, begin, end, stride);
      EXPECT_EQ(CompareRows(got, stride, want, shape.rows, tokens, begin, end), "");
    }
  }
}

TEST_P(MatMulTest, BatchEqualsSingleTokenCalls) {
  for (const Shape& shape : TestShapes(GetParam(), rng_)) {
    const StoredMatrix w = RandomMatrix(GetParam(), shape.rows, shape.cols, rng_);
    const size_t tokens = RandomTokens();
    const std::vector<float> x = RandomVector(tokens * shape.cols, rng_);
    for (Isa isa : SupportedIsas()) {
      SCOPED_TRACE(std::string(IsaName(isa)) + " shape [" + std::to_string(shape.rows) + ", " +
                   std::to_string(shape.cols) + "] tokens " + std::to_string(tokens));
      const std::vector<float> batch =
          RunMatMul(isa, w.View(), x, tokens, 0, shape.rows, shape.rows);
      std::vector<float> singles = SentinelBuffer(tokens * shape.rows);
      ScopedIsa scoped(isa);
      for (size_t t = 0; t < tokens; ++t) {
        MatMulRows(w.View(), std::span(x).subspan(t * shape.cols, shape.cols), 1, 0, shape.rows,
                   std::span(singles).subspan(t * shape.rows, shape.rows), shape.rows);
      }
      EXPECT_EQ(CompareRows(batch, shape.rows, singles, shape.rows, tokens, 0, shape.rows), "");
    }
  }
}

// The thread split: rows cut into random pieces, each its own call.
TEST_P(MatMulTest, SplitRowRangesEqualWholeRange) {
  for (const Shape& shape : TestShapes(GetParam(), rng_)) {
    const StoredMatrix w = RandomMatrix(GetParam(), shape.rows, shape.cols, rng_);
    const size_t tokens = RandomTokens();
    const std::vector<float> x = RandomVector(tokens * shape.cols, rng_);
    for (Isa isa : SupportedIsas()) {
      const std::vector<float> whole =
          RunMatMul(isa, w.View(), x, tokens, 0, shape.rows, shape.rows);
      std::vector<float> pieces = SentinelBuffer(tokens * shape.rows);
      ScopedIsa scoped(isa);
      for (size_t begin = 0; begin < shape.rows;) {
        const size_t end =
            std::min<size_t>(shape.rows, begin + std::uniform_int_distribution<size_t>(1, 7)(rng_));
        MatMulRows(w.View(), x, tokens, begin, end, pieces, shape.rows);
        begin = end;
      }
      EXPECT_EQ(CompareRows(pieces, shape.rows, whole, shape.rows, tokens, 0, shape.rows), "")
          << IsaName(isa);
    }
  }
}

// The scalar reference against a double-precision dot of DequantizeRow: the
// error bound of a float sum scales with sum |w x|, so that is the reference
// magnitude (relative to the result itself, cancellation would make any bound
// meaningless).
TEST_P(MatMulTest, ScalarIsCloseToDoubleDot) {
  for (const Shape& shape : TestShapes(GetParam(), rng_)) {
    const StoredMatrix w = RandomMatrix(GetParam(), shape.rows, shape.cols, rng_);
    const size_t tokens = RandomTokens();
    const std::vector<float> x = RandomVector(tokens * shape.cols, rng_);
    const std::vector<float> y =
        RunMatMul(Isa::kScalar, w.View(), x, tokens, 0, shape.rows, shape.rows);
    std::vector<float> row(shape.cols);
    for (uint64_t r = 0; r < shape.rows; ++r) {
      DequantizeRow(w.View(), r, row);
      for (size_t t = 0; t < tokens; ++t) {
        double dot = 0, magnitude = 0;
        for (uint64_t c = 0; c < shape.cols; ++c) {
          dot += double{row[c]} * x[t * shape.cols + c];
          magnitude += std::abs(double{row[c]} * x[t * shape.cols + c]);
        }
        ASSERT_LE(std::abs(y[t * shape.rows + r] - dot), 1e-5 * magnitude + 1e-30)
            << "row " << r << " token " << t;
      }
    }
  }
}

// Rows long enough for the SIMD kernels' column blocks (2048 to 8192 columns
// by token count) and scale groups: a k2 expert's 7168, a partial last scale
// group (7264), and for formats with any width a short last block with a
// partial last chunk (7268, 2049). Every token count up to 9.
TEST_P(MatMulTest, LongRowsAllTileSizes) {
  std::vector<uint64_t> widths = {7168, 7264};
  if (!ShapeProblem(GetParam(), {1, 7264}).empty()) widths[1] = 7424;  // 29 super-blocks
  if (ShapeProblem(GetParam(), {1, 7268}).empty()) {
    widths.push_back(7268);
    widths.push_back(2049);
  }
  for (uint64_t cols : widths) {
    const StoredMatrix w = RandomMatrix(GetParam(), 11, cols, rng_);
    const std::vector<float> x = RandomVector(9 * cols, rng_);
    std::vector<float> want = SentinelBuffer(9 * 11);
    internal::MatMulRowsScalar(w.View(), x.data(), 9, 0, 11, want.data(), 11);
    for (Isa isa : SupportedSimdIsas()) {
      for (size_t tokens = 1; tokens <= 9; ++tokens) {
        const std::vector<float> got = RunMatMul(isa, w.View(), x, tokens, 0, 11, 11);
        EXPECT_EQ(CompareRows(got, 11, want, 11, tokens, 0, 11), "")
            << IsaName(isa) << " cols " << cols << " tokens " << tokens;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllFormats, MatMulTest,
                         ::testing::Values(TensorFormat::kF32, TensorFormat::kF16,
                                           TensorFormat::kBF16, TensorFormat::kF8E4M3B128,
                                           TensorFormat::kQ8B32, TensorFormat::kQ4B32,
                                           TensorFormat::kMxfp4B32, TensorFormat::kGgmlQ8_0,
                                           TensorFormat::kGgmlQ4_0, TensorFormat::kGgmlMxfp4,
                                           TensorFormat::kGgmlQ4_1, TensorFormat::kGgmlQ5_0,
                                           TensorFormat::kGgmlQ5_1, TensorFormat::kGgmlQ2_K,
                                           TensorFormat::kGgmlQ3_K, TensorFormat::kGgmlQ4_K,
                                           TensorFormat::kGgmlQ5_K, TensorFormat::kGgmlQ6_K,
                                           TensorFormat::kVq3rB32, TensorFormat::kF8E4M3B32),
                         [](const ::testing::TestParamInfo<TensorFormat>& info) {
                           return std::string(TensorFormatName(info.param));
                         });

TEST(MatMulF8Test, NanCodesGiveNanInEveryIsa) {
  std::mt19937_64 rng(7);
  for (TensorFormat format : kTiledFp8Formats) {
    StoredMatrix w = RandomMatrix(format, 6, 40, rng);
    w.data[2 * 40 + 5] = std::byte{0x7f};
    w.data[4 * 40 + 33] = std::byte{0xff};  // in the tail chunk
    const std::vector<float> x = RandomVector(40, rng);
    for (Isa isa : SupportedIsas()) {
      const std::vector<float> y = RunMatMul(isa, w.View(), x, 1, 0, 6, 6);
      for (int r = 0; r < 6; ++r) {
        EXPECT_EQ(std::isnan(y[r]), r == 2 || r == 4)
            << TensorFormatName(format) << " " << IsaName(isa) << " row " << r;
      }
    }
  }
}

// mxfp4 at the ends of E8M0: blocks scaled by 2^-127 (s = 0, a subnormal scale,
// so subnormal weights and products), 2^-126 (s = 1) and 2^127 (s = 254, with
// codes up to 1.5 so that no weight overflows), mixed with ordinary ones in the
// same rows; x shrunk by 2^-10 so no sum overflows. Every token count up to 9
// (partial token tiles), odd row ranges, and batch against single tokens.
StoredMatrix ExtremeMxfp4(uint64_t rows, uint64_t cols, std::mt19937_64& rng) {
  StoredMatrix w(TensorFormat::kMxfp4B32, rows, cols);
  constexpr uint8_t kScales[] = {0, 1, 254, 127, 0, 2, 254, 120};
  for (uint64_t block = 0; block < w.scale.size(); ++block) {
    const uint8_t s = kScales[rng() % std::size(kScales)];
    w.scale[block] = std::byte{s};
    for (uint64_t i = 0; i < kRowBlock / 2; ++i) {
      uint8_t byte = static_cast<uint8_t>(rng());
      if (s == 254) byte &= 0xbb;  // nibbles 0-3 and 8-11: |value| <= 1.5
      w.data[block * kRowBlock / 2 + i] = std::byte{byte};
    }
  }
  return w;
}

TEST(MatMulMxfp4Test, ExtremeScalesBitForBit) {
  std::mt19937_64 rng(254);
  for (const Shape& shape : {Shape{37, 96}, Shape{5, 7168}, Shape{18, 544}}) {
    const StoredMatrix w = ExtremeMxfp4(shape.rows, shape.cols, rng);
    std::vector<float> x = RandomVector(9 * shape.cols, rng);
    for (float& v : x) v *= 0x1p-10f;
    std::vector<float> want = SentinelBuffer(9 * shape.rows);
    internal::MatMulRowsScalar(w.View(), x.data(), 9, 0, shape.rows, want.data(), shape.rows);
    for (Isa isa : SupportedIsas()) {
      for (size_t tokens = 1; tokens <= 9; ++tokens) {
        const size_t begin = tokens % 3, end = shape.rows - (tokens % 2);  // odd ranges
        SCOPED_TRACE(std::string(IsaName(isa)) + " cols " + std::to_string(shape.cols) +
                     " tokens " + std::to_string(tokens));
        const std::vector<float> got = RunMatMul(isa, w.View(), x, tokens, begin, end, shape.rows);
        EXPECT_EQ(CompareRows(got, shape.rows, want, shape.rows, tokens, begin, end), "");
        std::vector<float> singles = SentinelBuffer(tokens * shape.rows);
        ScopedIsa scoped(isa);
        for (size_t t = 0; t < tokens; ++t) {
          MatMulRows(w.View(), std::span(x).subspan(t * shape.cols, shape.cols), 1, begin, end,
                     std::span(singles).subspan(t * shape.rows, shape.rows), shape.rows);
        }
        EXPECT_EQ(CompareRows(singles, shape.rows, got, shape.rows, tokens, begin, end), "");
      }
    }
  }
}

TEST(MatMulMxfp4Test, NanScaleGivesNanInEveryIsa) {
  std::mt19937_64 rng(255);
  StoredMatrix w = RandomMatrix(TensorFormat::kMxfp4B32, 6, 64, rng);
  w.scale[2 * 2 + 1] = std::byte{255};  // row 2, second block
  const std::vector<float> x = RandomVector(64, rng);
  for (Isa isa : SupportedIsas()) {
    const std::vector<float> y = RunMatMul(isa, w.View(), x, 1, 0, 6, 6);
    for (int r = 0; r < 6; ++r) EXPECT_EQ(std::isnan(y[r]), r == 2) << IsaName(isa) << " row " << r;
  }
}

TEST(MatMulTest, EmptyRangeWritesNothing) {
  std::mt19937_64 rng(1);
  const StoredMatrix w = RandomMatrix(TensorFormat::kQ4B32, 4, 64, rng);
  const std::vector<float> x = RandomVector(64, rng);
  for (Isa isa : SupportedIsas()) {
    const std::vector<float> y = RunMatMul(isa, w.View(), x, 1, 2, 2, 4);
    EXPECT_EQ(CompareRows(y, 4, y, 4, 1, 0, 0), "");
  }
}

}  // namespace
}  // namespace warp::kernels
