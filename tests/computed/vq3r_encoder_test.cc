// The converter's vq3r_b32 quantizer (computed/convert/vq3r_encoder.*): the
// bounded sample, the k-means codebook, and the encoder's bytes read back
// through the kernels' DequantizeRow, which defines what they mean
// (docs/FORMAT.md#tensor-formats). The error figures printed here are the ones
// docs/EFFICIENCY.md quotes for Gaussian rows.

#include "computed/convert/vq3r_encoder.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/matrix_view.h"
#include "common/numeric/half.h"
#include "computed/convert/encode.h"
#include "gtest/gtest.h"

namespace warp::computed {
namespace {

// Rows of Gaussian values whose scale varies by row, as weight rows do.
std::vector<float> GaussianRows(uint64_t rows, uint64_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(rows * cols);
  for (uint64_t r = 0; r < rows; ++r) {
    const float scale = 0.01f * (1.0f + static_cast<float>(r % 7));
    for (uint64_t c = 0; c < cols; ++c) values[r * cols + c] = scale * normal(rng);
  }
  return values;
}

struct Vq3rMatrix {
  uint64_t rows, cols;
  std::vector<std::byte> data, scale;
  Vq3rCodebook codebook;

  Vq3rMatrix(const Vq3rCodebook& book, const std::vector<float>& values, uint64_t c)
      : rows(values.size() / c),
        cols(c),
        data(DataBytes(TensorFormat::kVq3rB32, {rows, cols})),
        scale(ScaleBytes(TensorFormat::kVq3rB32, {rows, cols})),
        codebook(book) {
    EncodeVq3rRows(codebook, values, cols, data, scale);
  }

  std::vector<float> Decoded() const {
    const kernels::MatrixView view{.format = TensorFormat::kVq3rB32,
                                   .rows = rows,
                                   .cols = cols,
                                   .data = data.data(),
                                   .scale = scale.data(),
                                   .codebook = &codebook};
    std::vector<float> out(rows * cols);
    for (uint64_t r = 0; r < rows; ++r) {
      kernels::DequantizeRow(view, r, std::span(out).subspan(r * cols, cols));
    }
    return out;
  }
};

// Squared error over squared signal.
double RelativeError(const std::vector<float>& want, const std::vector<float>& got) {
  double error = 0, signal = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    error += (double{want[i]} - got[i]) * (double{want[i]} - got[i]);
    signal += double{want[i]} * want[i];
  }
  return error / signal;
}

Vq3rCodebook TrainOn(const std::vector<float>& values, uint64_t cols) {
  Vq3rSample sample(uint64_t{1} << 15, 7);
  sample.AddRows(values, cols);
  return sample.Train();
}

TEST(Vq3rSampleTest, KeepsAtMostItsCapacityAndIsDeterministic) {
  const std::vector<float> values = GaussianRows(16, 256, 1);
  Vq3rSample a(100, 3), b(100, 3), c(100, 4), roomy(10000, 3);
  for (Vq3rSample* s : {&a, &b, &c, &roomy}) s->AddRows(values, 256);
  EXPECT_EQ(a.seen(), 16 * 256 / 4);
  EXPECT_EQ(a.vectors().size(), 100 * 4);
  EXPECT_EQ(a.vectors(), b.vectors());
  EXPECT_NE(a.vectors(), c.vectors());
  EXPECT_EQ(roomy.vectors().size(), 16 * 256);
  // Every block is normalized to RMS 1 before it is kept.
  double square = 0;
  for (float v : roomy.vectors()) square += double{v} * v;
  EXPECT_NEAR(square / roomy.vectors().size(), 1.0, 1e-5);
}

TEST(Vq3rSampleTest, ZeroBlocksAreNotSampled) {
  std::vector<float> values(2 * 64, 0.0f);
  values[70] = 1.0f;  // the second row's first block
  Vq3rSample sample(100, 1);
  sample.AddRows(values, 64);
  EXPECT_EQ(sample.seen(), 8u);
}

TEST(Vq3rSampleTest, TrainingIsDeterministicAndTheStagesDiffer) {
  const std::vector<float> values = GaussianRows(32, 512, 2);
  const Vq3rCodebook first = TrainOn(values, 512), second = TrainOn(values, 512);
  EXPECT_EQ(first.centroids, second.centroids);
  // Stage 1 codes what stage 0 leaves: smaller in magnitude.
  double stage0 = 0, stage1 = 0;
  for (uint32_t e = 0; e < kVq3rEntries; ++e) {
    for (uint32_t k = 0; k < kVq3rDim; ++k) {
      stage0 += std::abs(first.Centroid(0, e, k));
      stage1 += std::abs(first.Centroid(1, e, k));
    }
  }
  EXPECT_LT(stage1, 0.6 * stage0);
  for (uint32_t k = 0; k < kVq3rDim; ++k) {
    EXPECT_EQ(first.sums[(3 | 5 << 6) * 4 + k], first.Centroid(0, 3, k) + first.Centroid(1, 5, k));
  }
}

// Gaussian rows: vq3r (3.5 bits an element) against q4_b32 (4.5).
TEST(Vq3rEncodeTest, GaussianRowsDecodeCloseToTheInput) {
  const uint64_t cols = 1024;
  const std::vector<float> values = GaussianRows(64, cols, 3);
  const Vq3rMatrix vq(TrainOn(values, cols), values, cols);
  const double vq_error = RelativeError(values, vq.Decoded());

  std::vector<std::byte> q4_data(DataBytes(TensorFormat::kQ4B32, {64, cols}));
  std::vector<std::byte> q4_scale(ScaleBytes(TensorFormat::kQ4B32, {64, cols}));
  EncodeRows(TensorFormat::kQ4B32, values, cols, q4_data, q4_scale);
  const kernels::MatrixView q4{.format = TensorFormat::kQ4B32,
                               .rows = 64,
                               .cols = cols,
                               .data = q4_data.data(),
                               .scale = q4_scale.data()};
  std::vector<float> q4_values(values.size());
  for (uint64_t r = 0; r < 64; ++r) {
    kernels::DequantizeRow(q4, r, std::span(q4_values).subspan(r * cols, cols));
  }
  const double q4_error = RelativeError(values, q4_values);
  std::printf(
      "[vq3r] Gaussian rows: relative squared error vq3r %.4f (%.1f dB), q4 %.4f (%.1f dB)\n",
      vq_error, -10 * std::log10(vq_error), q4_error, -10 * std::log10(q4_error));
  EXPECT_LT(vq_error, 0.05);
  EXPECT_GT(vq_error, q4_error);  // fewer bits, more error: the test can tell them apart
}

// 64 directions of one norm, (+-3, +-1, +-1, +-1) with the 3 in any place, in
// one stage and zeros in the other: rows of these times 2 encode exactly, so
// each 12-bit code lands where DequantizeRow reads it, its stage-0 bits (low
// 6) in one run and its stage-1 bits (high 6) in the other.
TEST(Vq3rEncodeTest, CodebookDirectionsEncodeExactly) {
  for (uint32_t stage : {0u, 1u}) {
    SCOPED_TRACE("directions in stage " + std::to_string(stage));
    Vq3rCodebook book;
    for (uint32_t e = 0; e < kVq3rEntries; ++e) {
      for (uint32_t k = 0; k < kVq3rDim; ++k) {
        const float magnitude = k == e / 16 ? 3.0f : 1.0f;
        book.centroids[(stage * kVq3rEntries + e) * kVq3rDim + k] =
            (e >> (k % 4)) & 1 ? -magnitude : magnitude;
      }
    }
    book.ComputeSums();
    std::mt19937_64 rng(5 + stage);
    const uint64_t rows = 3, cols = 96;
    std::vector<float> values(rows * cols);
    for (uint64_t p = 0; p < rows * cols / 4; ++p) {
      const uint32_t e = static_cast<uint32_t>(rng() % kVq3rEntries);
      for (uint32_t k = 0; k < kVq3rDim; ++k) values[p * 4 + k] = 2.0f * book.Centroid(stage, e, k);
    }
    const Vq3rMatrix vq(book, values, cols);
    const std::vector<float> decoded = vq.Decoded();
    for (size_t n = 0; n < values.size(); ++n) ASSERT_EQ(decoded[n], values[n]) << "element " << n;
  }
}

TEST(Vq3rEncodeTest, ZeroAndNonFiniteBlocksStoreScaleZero) {
  const uint64_t cols = 64;
  std::vector<float> values = GaussianRows(1, cols, 4);
  for (uint64_t c = 0; c < 32; ++c) values[c] = 0.0f;
  values[40] = std::numeric_limits<float>::infinity();
  const Vq3rMatrix vq(TrainOn(GaussianRows(8, cols, 5), cols), values, cols);
  EXPECT_EQ(vq.scale[0], std::byte{0});
  EXPECT_EQ(vq.scale[1], std::byte{0});
  EXPECT_EQ(vq.scale[2], std::byte{0});
  EXPECT_EQ(vq.scale[3], std::byte{0});
  for (float v : vq.Decoded()) EXPECT_EQ(v, 0.0f);
}

// The encoder splits many rows across threads: the bytes are those of one row at a time.
TEST(Vq3rEncodeTest, ThreadedRowsEqualRowByRow) {
  const uint64_t rows = 300, cols = 128;
  const std::vector<float> values = GaussianRows(rows, cols, 6);
  const Vq3rCodebook book = TrainOn(values, cols);
  const Vq3rMatrix whole(book, values, cols);
  for (uint64_t r = 0; r < rows; r += 37) {
    const std::vector<float> row(values.begin() + r * cols, values.begin() + (r + 1) * cols);
    const Vq3rMatrix one(book, row, cols);
    ASSERT_EQ(0,
              std::memcmp(one.data.data(), whole.data.data() + r * cols / 8 * 3, one.data.size()))
        << "row " << r;
    ASSERT_EQ(0,
              std::memcmp(one.scale.data(), whole.scale.data() + r * cols / 16, one.scale.size()))
        << "row " << r;
  }
}

}  // namespace
}  // namespace warp::computed
