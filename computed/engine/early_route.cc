#include "computed/engine/early_route.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "common/check.h"
#include "common/compute/linear.h"
#include "common/format/tensor_format.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {
namespace {

// Rows of W_o folded a step: their transpose [W_o.cols][kBand] in f32 is the
// weight of one Linear whose tokens are W_r diag(g) restricted to them.
constexpr uint64_t kBand = 256;
// Columns of the band transposed a block: the block's lines stay in L1.
constexpr uint64_t kTransposeBlock = 64;

// As RmsNorm divides by it.
float Rms(std::span<const float> x, float eps) {
  float sum = 0.0f;
  for (float v : x) sum += v * v;
  return std::sqrt(sum / static_cast<float>(x.size()) + eps);
}

}  // namespace

std::vector<float> FoldRouterThroughOutput(const kernels::MatrixView& router,
                                           std::span<const float> gain,
                                           const kernels::MatrixView& output, ComputeContext& compute) {
  const uint64_t experts = router.rows, hidden = router.cols, cols = output.cols;
  WARP_CHECK(gain.size() == hidden && output.rows == hidden);
  // W_r diag(g), [experts][hidden].
  std::vector<float> gained(experts * hidden);
  for (uint64_t e = 0; e < experts; ++e) {
    std::span<float> row(&gained[e * hidden], hidden);
    kernels::DequantizeRow(router, e, row);
    for (uint64_t i = 0; i < hidden; ++i) row[i] *= gain[i];
  }
  std::vector<float> folded(experts * cols, 0.0f);
  std::vector<float> rows(kBand * cols), band(cols * kBand), tokens(experts * kBand),
      partial(folded.size());
  for (uint64_t first = 0; first < hidden; first += kBand) {
    const uint64_t b = std::min(kBand, hidden - first);
    for (uint64_t i = 0; i < b; ++i) {
      kernels::DequantizeRow(output, first + i, {&rows[i * cols], cols});
    }
    for (uint64_t j0 = 0; j0 < cols; j0 += kTransposeBlock) {
      const uint64_t j1 = std::min(cols, j0 + kTransposeBlock);
      for (uint64_t i = 0; i < b; ++i) {
        for (uint64_t j = j0; j < j1; ++j) band[j * b + i] = rows[i * cols + j];
      }
    }
    for (uint64_t e = 0; e < experts; ++e) {
      std::copy_n(&gained[e * hidden + first], b, &tokens[e * b]);
    }
    const kernels::MatrixView band_view{.format = TensorFormat::kF32,
                                        .rows = cols,
                                        .cols = b,
                                        .data = reinterpret_cast<const std::byte*>(band.data())};
    Linear(compute, band_view, tokens.data(), experts, partial.data());
    for (size_t k = 0; k < folded.size(); ++k) folded[k] += partial[k];
  }
  return folded;
}

EarlyRoute::EarlyRoute(uint32_t layer, float eps, const Router& router,
                       const TokenMixer::OutputProjection& output, std::span<const float> ffn_norm,
                       uint32_t top_k, ComputeContext& compute, const kernels::MatrixView* stored)
    : layer_(layer),
      eps_(eps),
      router_(router),
      top_k_(top_k),
      compute_(compute),
      hidden_(output.weight.rows),
      experts_(router.num_experts()),
      scale_free_(router.ScaleFree()),
      gain_(ffn_norm.begin(), ffn_norm.end()) {
  WARP_CHECK(!router.hashed() && gain_.size() == hidden_ && router.weight().cols == hidden_);
  const uint64_t cols = output.weight.cols;
  if (stored != nullptr) {
    WARP_CHECK(stored->format == TensorFormat::kF32 && stored->rows == experts_ &&
               stored->cols == cols);  // EarlyRouteFoldSpecs, checked at open
    folded_view_ = *stored;
  } else {
    folded_ = FoldRouterThroughOutput(router.weight(), gain_, output.weight, compute_);
    folded_view_ = {.format = TensorFormat::kF32,
                    .rows = experts_,
                    .cols = cols,
                    .data = reinterpret_cast<const std::byte*>(folded_.data())};
  }
  // W_r (g * b), [experts].
  constant_.assign(experts_, 0.0f);
  std::vector<float> row(hidden_);
  for (uint32_t e = 0; !output.bias.empty() && e < experts_; ++e) {
    kernels::DequantizeRow(router.weight(), e, row);
    for (uint64_t i = 0; i < hidden_; ++i) constant_[e] += row[i] * gain_[i] * output.bias[i];
  }
}

bool EarlyRoute::Wanted() {
  if (quiet_passes_ < kQuietPasses) return true;
  return ++resting_passes_ % kProbeEvery == 0;
}

void EarlyRoute::Begin(std::span<const float> h, uint32_t n) {
  predicting_ = true;
  predicted_.assign(experts_, false);
  predicted_list_.clear();
  std::vector<float> gained(uint64_t{n} * hidden_);
  stream_rms_.resize(n);
  for (uint32_t t = 0; t < n; ++t) {
    const std::span<const float> row = h.subspan(t * hidden_, hidden_);
    for (uint64_t i = 0; i < hidden_; ++i) gained[t * hidden_ + i] = row[i] * gain_[i];
    stream_rms_[t] = Rms(row, eps_);
  }
  stream_logits_.resize(uint64_t{n} * experts_);
  Linear(compute_, router_.weight(), gained.data(), n, stream_logits_.data());
}

std::vector<ExpertKey> EarlyRoute::Predict(std::span<const float> a, uint32_t first, uint32_t m) {
  std::vector<float> logits(uint64_t{m} * experts_);
  Linear(compute_, folded_view_, a.data(), m, logits.data());
  std::vector<ExpertKey> keys;
  for (uint32_t t = 0; t < m; ++t) {
    const uint32_t row = first + t;
    // A scale-free rule needs no 1 / rms(x); the others get its estimate.
    const float inv = scale_free_ ? 1.0f : 1.0f / (stream_rms_[row] * rms_ratio_);
    std::span<float> out(&logits[uint64_t{t} * experts_], experts_);
    for (uint32_t e = 0; e < experts_; ++e) {
      out[e] = (out[e] + stream_logits_[uint64_t{row} * experts_ + e] + constant_[e]) * inv;
    }
    for (uint32_t expert : router_.RouteLogits(out, top_k_).experts) {
      if (predicted_[expert]) continue;
      predicted_[expert] = true;
      predicted_list_.push_back(expert);
      keys.push_back({layer_, expert});
    }
  }
  return keys;
}

void EarlyRoute::End(std::span<const float> stream) {
  if (!predicting_ || scale_free_ || stream_rms_.empty()) return;
  const uint64_t last = stream_rms_.size() - 1;
  const float after = Rms(stream.subspan(last * hidden_, hidden_), eps_);
  if (stream_rms_[last] > 0.0f && std::isfinite(after)) rms_ratio_ = after / stream_rms_[last];
}

void EarlyRoute::Score(std::span<const ExpertKey> routed, uint64_t uncached, ForwardStats& stats) {
  if (predicting_) {
    std::vector<bool> used(experts_, false);
    for (const ExpertKey& key : routed) used[key.expert] = true;
    stats.early_routed += predicted_list_.size();
    for (uint32_t expert : predicted_list_) stats.early_unused += !used[expert];
    predicting_ = false;
  }
  quiet_passes_ = uncached == 0 ? quiet_passes_ + 1 : 0;
}

}  // namespace warp::computed
