#include "computed/engine/ops.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"

namespace warp::computed {
namespace {

double YarnCorrectionDim(double rotations, double dim, double base, double max_position) {
  return dim * std::log(max_position / (rotations * 2 * M_PI)) / (2 * std::log(base));
}

}  // namespace

void RmsNorm(std::span<const float> x, std::span<const float> weight, float eps,
             std::span<float> out) {
  float sum = 0.0f;
  for (float v : x) sum += v * v;
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(x.size()) + eps);
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv * weight[i];
}

void RmsNormUnweighted(std::span<const float> x, float eps, std::span<float> out) {
  float sum = 0.0f;
  for (float v : x) sum += v * v;
  const float inv = 1.0f / std::sqrt(sum / static_cast<float>(x.size()) + eps);
  for (size_t i = 0; i < x.size(); ++i) out[i] = x[i] * inv;
}

void Softmax(std::span<float> x) {
  const float max = *std::max_element(x.begin(), x.end());
  float sum = 0.0f;
  for (float& v : x) {
    v = std::exp(v - max);
    sum += v;
  }
  for (float& v : x) v /= sum;
}

Rope::Rope(const RopePlan& plan) : dim_(plan.dim), interleaved_(plan.interleaved) {
  const uint32_t dim = plan.dim;
  WARP_CHECK(dim % 2 == 0);
  const double base = plan.theta;
  inv_freq_.resize(dim / 2);
  // As transformers: pos_freqs = base ** (arange(0, dim, 2) / dim) in float32.
  std::vector<float> pos_freqs(dim / 2);
  for (uint32_t i = 0; i < dim / 2; ++i) {
    pos_freqs[i] = static_cast<float>(
        std::pow(base, static_cast<double>(static_cast<float>(2 * i) / static_cast<float>(dim))));
  }
  if (!plan.yarn.enabled) {
    for (uint32_t i = 0; i < dim / 2; ++i) inv_freq_[i] = 1.0f / pos_freqs[i];
    return;
  }
  const YarnScaling& yarn = plan.yarn;
  attention_factor_ = static_cast<float>(
      yarn.attention_factor > 0 ? yarn.attention_factor
      : yarn.mscale != 0 && yarn.mscale_all_dim != 0
          ? YarnMscale(yarn.factor, yarn.mscale) / YarnMscale(yarn.factor, yarn.mscale_all_dim)
          : YarnMscale(yarn.factor, 1.0));
  double low = YarnCorrectionDim(yarn.beta_fast, dim, base, yarn.original_max_position);
  double high = YarnCorrectionDim(yarn.beta_slow, dim, base, yarn.original_max_position);
  if (yarn.truncate) {  // transformers' default; gpt-oss releases keep the fractional range
    low = std::floor(low);
    high = std::ceil(high);
  }
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(dim - 1));
  if (low == high) high += 0.001;
  for (uint32_t i = 0; i < dim / 2; ++i) {
    const float extrapolation = 1.0f / pos_freqs[i];
    const float interpolation = 1.0f / (static_cast<float>(yarn.factor) * pos_freqs[i]);
    const float ramp =
        std::clamp(static_cast<float>((static_cast<double>(i) - low) / (high - low)), 0.0f, 1.0f);
    const float extrapolation_factor = 1.0f - ramp;
    inv_freq_[i] =
        interpolation * (1.0f - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
}

void Rope::Apply(std::span<float> x, uint32_t pos) const { Rotate(x, pos, 1.0f); }

void Rope::Unapply(std::span<float> x, uint32_t pos) const { Rotate(x, pos, -1.0f); }

void Rope::Rotate(std::span<float> x, uint32_t pos, float direction) const {
  const uint32_t half = dim_ / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(pos) * inv_freq_[i];
    const float c = static_cast<float>(std::cos(static_cast<double>(angle))) * attention_factor_;
    const float s =
        direction * static_cast<float>(std::sin(static_cast<double>(angle))) * attention_factor_;
    float& a = interleaved_ ? x[2 * i] : x[i];
    float& b = interleaved_ ? x[2 * i + 1] : x[i + half];
    const float a0 = a;
    const float b0 = b;
    a = a0 * c - b0 * s;
    b = b0 * c + a0 * s;
  }
}

}  // namespace warp::computed
