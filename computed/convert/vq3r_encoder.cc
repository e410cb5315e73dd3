#include "computed/convert/vq3r_encoder.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "common/check.h"
#include "common/numeric/half.h"

namespace warp::computed {
namespace {

constexpr uint32_t kK = kVq3rEntries, kD = kVq3rDim;
constexpr uint64_t kVectorsPerBlock = kRowBlock / kVq3rDim;
// Stage-0 centroids tried with a full stage-1 search each. On Gaussian rows
// (vq3r_encoder_test) 4 has 11% less squared error than greedy search (1),
// and 8 only 1.5% less again.
constexpr uint32_t kStage0Candidates = 4;
// Rounds of joint refinement after the two stages' k-means (Vq3rSample::Train).
constexpr int kJointRounds = 4;
// Rows per thread below which encoding stays on the caller's thread.
constexpr uint64_t kRowsPerThread = 64;

// A stage's centroids by element, with their squared norms, for the nearest search.
struct Stage {
  std::array<float, kK * kD> planar;  // planar[k * 64 + e]
  std::array<float, kK> norm;

  explicit Stage(const float* centroids) {  // centroids[e * 4 + k]
    for (uint32_t e = 0; e < kK; ++e) {
      float n = 0.0f;
      for (uint32_t k = 0; k < kD; ++k) {
        planar[k * kK + e] = centroids[e * kD + k];
        n += centroids[e * kD + k] * centroids[e * kD + k];
      }
      norm[e] = n;
    }
  }

  // dot[e] = u . c_e for every entry e.
  void Dots(const float* u, float* dot) const {
    for (uint32_t e = 0; e < kK; ++e) {
      dot[e] = u[0] * planar[e] + u[1] * planar[kK + e] + u[2] * planar[2 * kK + e] +
               u[3] * planar[3 * kK + e];
    }
  }

  uint32_t Nearest(const float* u) const {
    float score[kK];
    Dots(u, score);
    for (uint32_t e = 0; e < kK; ++e) score[e] = norm[e] - 2.0f * score[e];
    return static_cast<uint32_t>(std::min_element(score, score + kK) - score);
  }
};

// Eight lanes in GCC's vector extension: ymm registers in the AVX2 clone of
// CodeSearch::Code, pairs of xmm in the baseline one.
using F8 = float __attribute__((vector_size(32)));
using I8 = int32_t __attribute__((vector_size(32)));

// The index of the lowest of 64 scores, the first of equals (as std::min_element).
inline uint32_t ArgMin64(const float* score) {
  F8 low, next;
  std::memcpy(&low, score, sizeof(low));
  I8 at = {0, 1, 2, 3, 4, 5, 6, 7}, index = at;
  for (uint32_t j = 8; j < kK; j += 8) {
    std::memcpy(&next, score + j, sizeof(next));
    index += 8;
    const I8 lower = next < low;
    low = lower ? next : low;
    at = lower ? index : at;
  }
  uint32_t best = 0;
  for (uint32_t l = 1; l < 8; ++l) {
    if (low[l] < low[best] || (low[l] == low[best] && at[l] < at[best])) best = l;
  }
  return static_cast<uint32_t>(at[best]);
}

// The code of one normalized vector u: |u - c0_i - c1_j|^2 is |u|^2 + s0[i] +
// pair[i][j] - 2 u.c1_j with s0[i] = |c0_i|^2 - 2 u.c0_i and pair[i][j] =
// 2 c0_i.c1_j + |c1_j|^2, so each stage-0 candidate costs 64 adds, not 64 dots.
class CodeSearch {
 public:
  explicit CodeSearch(const Vq3rCodebook& codebook)
      : first_(codebook.centroids.data()), second_(codebook.centroids.data() + kK * kD) {
    for (uint32_t i = 0; i < kK; ++i) {
      for (uint32_t j = 0; j < kK; ++j) {
        float dot = 0.0f;
        for (uint32_t k = 0; k < kD; ++k)
          dot += codebook.Centroid(0, i, k) * codebook.Centroid(1, j, k);
        pair_[i * kK + j] = 2.0f * dot + second_.norm[j];
      }
    }
  }

  // Cloned for AVX2 where the CPU has it; -ffp-contract=off keeps every clone's bits equal.
  [[gnu::target_clones("avx2", "default")]] uint32_t Code(const float* u) const {
    float s0[kK], d1[kK];
    first_.Dots(u, s0);
    for (uint32_t e = 0; e < kK; ++e) s0[e] = first_.norm[e] - 2.0f * s0[e];
    second_.Dots(u, d1);
    for (uint32_t e = 0; e < kK; ++e) d1[e] *= 2.0f;
    // The kStage0Candidates lowest s0, lowest first (ties: lower index first).
    uint32_t top[kStage0Candidates];
    float top_score[kStage0Candidates];
    for (uint32_t n = 0; n < kStage0Candidates; ++n) {
      top[n] = ArgMin64(s0);
      top_score[n] = s0[top[n]];
      s0[top[n]] = std::numeric_limits<float>::infinity();
    }
    uint32_t best = 0;
    float best_score = std::numeric_limits<float>::infinity();
    for (uint32_t n = 0; n < kStage0Candidates; ++n) {
      const float* pair = &pair_[top[n] * kK];
      float score[kK];
      for (uint32_t j = 0; j < kK; ++j) score[j] = pair[j] - d1[j];
      const uint32_t j = ArgMin64(score);
      if (top_score[n] + score[j] < best_score) {
        best_score = top_score[n] + score[j];
        best = top[n] | j << 6;
      }
    }
    return best;
  }

 private:
  Stage first_, second_;
  std::array<float, kK * kK> pair_;
};

// Lloyd's k-means of `n` 4-d points into 64 centroids, k-means++ seeded.
std::array<float, kK * kD> KMeans(const std::vector<float>& points, int iterations,
                                  std::mt19937_64& rng) {
  const uint64_t n = points.size() / kD;
  std::array<float, kK * kD> centroids{};
  const auto distance = [&](const float* a, const float* b) {
    float s = 0.0f;
    for (uint32_t k = 0; k < kD; ++k) s += (a[k] - b[k]) * (a[k] - b[k]);
    return s;
  };
  // k-means++: each next centroid a point drawn with probability ~ its squared distance.
  std::vector<float> nearest(n, std::numeric_limits<float>::infinity());
  uint64_t pick = rng() % n;
  for (uint32_t c = 0; c < kK; ++c) {
    std::copy_n(&points[pick * kD], kD, &centroids[c * kD]);
    double total = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
      nearest[i] = std::min(nearest[i], distance(&points[i * kD], &centroids[c * kD]));
      total += nearest[i];
    }
    double target = static_cast<double>(rng() >> 11) * 0x1p-53 * total;
    pick = n - 1;
    for (uint64_t i = 0; i < n; ++i) {
      target -= nearest[i];
      if (target < 0) {
        pick = i;
        break;
      }
    }
  }
  std::vector<uint32_t> assigned(n);
  for (int it = 0; it < iterations; ++it) {
    const Stage stage(centroids.data());
    std::array<double, kK * kD> sum{};
    std::array<uint64_t, kK> count{};
    for (uint64_t i = 0; i < n; ++i) {
      assigned[i] = stage.Nearest(&points[i * kD]);
      ++count[assigned[i]];
      for (uint32_t k = 0; k < kD; ++k) sum[assigned[i] * kD + k] += points[i * kD + k];
    }
    for (uint32_t c = 0; c < kK; ++c) {
      if (count[c] == 0) {  // an empty cluster takes the point worst served
        uint64_t worst = 0;
        float worst_distance = -1.0f;
        for (uint64_t i = 0; i < n; ++i) {
          const float d = distance(&points[i * kD], &centroids[assigned[i] * kD]);
          if (d > worst_distance) worst_distance = d, worst = i;
        }
        std::copy_n(&points[worst * kD], kD, &centroids[c * kD]);
        continue;
      }
      for (uint32_t k = 0; k < kD; ++k) {
        centroids[c * kD + k] = static_cast<float>(sum[c * kD + k] / count[c]);
      }
    }
  }
  return centroids;
}

// The RMS of a block, or 0 when it is zero or not finite.
float BlockRms(const float* x) {
  double s = 0.0;
  for (uint64_t i = 0; i < kRowBlock; ++i) s += double{x[i]} * x[i];
  const double rms = std::sqrt(s / kRowBlock);
  return std::isfinite(rms) && rms > 0.0 ? static_cast<float>(rms) : 0.0f;
}

void Put12(std::byte* row_codes, uint64_t index, uint32_t code) {
  auto* b = reinterpret_cast<uint8_t*>(row_codes) + index / 2 * 3;
  if (index % 2 == 0) {
    b[0] = static_cast<uint8_t>(code);
    b[1] = static_cast<uint8_t>((b[1] & 0xf0) | (code >> 8));
  } else {
    b[1] = static_cast<uint8_t>((b[1] & 0x0f) | (code & 0xf) << 4);
    b[2] = static_cast<uint8_t>(code >> 4);
  }
}

void EncodeRange(const Vq3rCodebook& codebook, const CodeSearch& search, const float* rows,
                 uint64_t cols, uint64_t row_begin, uint64_t row_end, std::byte* data,
                 std::byte* scale) {
  const uint64_t blocks = cols / kRowBlock, row_bytes = cols / 8 * 3;
  for (uint64_t row = row_begin; row < row_end; ++row) {
    std::byte* codes = data + row * row_bytes;
    std::memset(codes, 0, row_bytes);
    for (uint64_t b = 0; b < blocks; ++b) {
      const float* x = rows + row * cols + b * kRowBlock;
      const float rms = BlockRms(x);
      double xq = 0.0, qq = 0.0;
      for (uint64_t v = 0; v < kVectorsPerBlock && rms > 0.0f; ++v) {
        float u[kD];
        for (uint32_t k = 0; k < kD; ++k) u[k] = x[v * kD + k] / rms;
        const uint32_t code = search.Code(u);
        Put12(codes, b * kVectorsPerBlock + v, code);
        for (uint32_t k = 0; k < kD; ++k) {
          const double q = codebook.Centroid(0, code & 63, k) + codebook.Centroid(1, code >> 6, k);
          xq += q * x[v * kD + k];
          qq += q * q;
        }
      }
      // The scale that minimizes the block's squared error for these codes.
      const double d = qq > 0.0 ? std::clamp(xq / qq, -65504.0, 65504.0) : 0.0;
      const uint16_t bits = FloatToHalf(static_cast<float>(d));
      std::memcpy(scale + 2 * (row * blocks + b), &bits, 2);
    }
  }
}

}  // namespace

Vq3rSample::Vq3rSample(uint64_t capacity, uint64_t seed) : capacity_(capacity), rng_(seed) {}

void Vq3rSample::AddRows(std::span<const float> rows, uint64_t cols) {
  WARP_CHECK(cols % kRowBlock == 0 && rows.size() % cols == 0);
  for (uint64_t b = 0; b < rows.size() / kRowBlock; ++b) {
    const float* x = rows.data() + b * kRowBlock;
    const float rms = BlockRms(x);
    if (rms == 0.0f) continue;
    for (uint64_t v = 0; v < kVectorsPerBlock; ++v) {
      ++seen_;
      uint64_t slot = vectors_.size() / kD;
      if (slot >= capacity_) {
        slot = rng_() % seen_;
        if (slot >= capacity_) continue;
      } else {
        vectors_.resize(vectors_.size() + kD);
      }
      for (uint32_t k = 0; k < kD; ++k) vectors_[slot * kD + k] = x[v * kD + k] / rms;
    }
  }
}

Vq3rCodebook Vq3rSample::Train(int iterations) const {
  WARP_CHECK(!vectors_.empty());
  std::mt19937_64 rng(seen_);
  Vq3rCodebook codebook;
  const std::array<float, kK* kD> first = KMeans(vectors_, iterations, rng);
  const Stage stage(first.data());
  std::vector<float> residual(vectors_.size());
  for (uint64_t i = 0; i < vectors_.size() / kD; ++i) {
    const uint32_t c = stage.Nearest(&vectors_[i * kD]);
    for (uint32_t k = 0; k < kD; ++k)
      residual[i * kD + k] = vectors_[i * kD + k] - first[c * kD + k];
  }
  const std::array<float, kK* kD> second = KMeans(residual, iterations, rng);
  std::copy(first.begin(), first.end(), codebook.centroids.begin());
  std::copy(second.begin(), second.end(), codebook.centroids.begin() + kK * kD);
  codebook.ComputeSums();
  // Joint refinement: code the sample as the encoder will (both stages chosen
  // together), then move each centroid to the mean of what its vectors need
  // from it given the other stage's choice.
  const uint64_t n = vectors_.size() / kD;
  std::vector<uint32_t> codes(n);
  for (int round = 0; round < kJointRounds; ++round) {
    const CodeSearch search(codebook);
    for (uint64_t v = 0; v < n; ++v) codes[v] = search.Code(&vectors_[v * kD]);
    for (uint32_t stage = 0; stage < kVq3rStages; ++stage) {
      std::array<double, kK * kD> sum{};
      std::array<uint64_t, kK> count{};
      for (uint64_t v = 0; v < n; ++v) {
        const uint32_t own = stage == 0 ? codes[v] & 63 : codes[v] >> 6;
        const uint32_t other = stage == 0 ? codes[v] >> 6 : codes[v] & 63;
        ++count[own];
        for (uint32_t k = 0; k < kD; ++k) {
          sum[own * kD + k] += vectors_[v * kD + k] - codebook.Centroid(1 - stage, other, k);
        }
      }
      for (uint32_t e = 0; e < kK; ++e) {
        if (count[e] == 0) continue;  // an unused centroid stays where it is
        for (uint32_t k = 0; k < kD; ++k) {
          codebook.centroids[(stage * kK + e) * kD + k] =
              static_cast<float>(sum[e * kD + k] / count[e]);
        }
      }
    }
    codebook.ComputeSums();
  }
  return codebook;
}

void EncodeVq3rRows(const Vq3rCodebook& codebook, std::span<const float> rows, uint64_t cols,
                    std::span<std::byte> data, std::span<std::byte> scale) {
  WARP_CHECK(cols % kRowBlock == 0 && rows.size() % cols == 0);
  const uint64_t num_rows = rows.size() / cols;
  WARP_CHECK(data.size() >= num_rows * cols / 8 * 3 && scale.size() >= num_rows * cols / 16);
  const CodeSearch search(codebook);
  const uint64_t threads = std::clamp<uint64_t>(num_rows / kRowsPerThread, 1,
                                                std::max(1u, std::thread::hardware_concurrency()));
  std::vector<std::thread> workers;
  for (uint64_t t = 1; t < threads; ++t) {
    workers.emplace_back([&, t] {
      EncodeRange(codebook, search, rows.data(), cols, num_rows * t / threads,
                  num_rows * (t + 1) / threads, data.data(), scale.data());
    });
  }
  EncodeRange(codebook, search, rows.data(), cols, 0, num_rows / threads, data.data(),
              scale.data());
  for (std::thread& worker : workers) worker.join();
}

}  // namespace warp::computed
