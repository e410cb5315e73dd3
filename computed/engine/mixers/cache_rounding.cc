#include "computed/engine/mixers/cache_rounding.h"

#include <algorithm>
#include <cmath>

namespace warp::computed {
namespace {

constexpr float kFp8Max = 448.0f;
constexpr float kFp4Max = 6.0f;

float BlockMax(std::span<const float> block) {
  float amax = 0.0f;
  for (float v : block) amax = std::max(amax, std::fabs(v));
  return amax;
}

// Rounds each block of x / scale(amax) with `round`, times the scale.
template <class Scale, class Round>
void RoundTrip(std::span<float> x, uint32_t block, Scale scale_of, Round round, float max) {
  if (block == 0 || x.size() % block != 0) return;
  for (size_t begin = 0; begin < x.size(); begin += block) {
    const std::span<float> b = x.subspan(begin, block);
    const float scale = scale_of(BlockMax(b));
    for (float& v : b) v = round(std::clamp(v / scale, -max, max)) * scale;
  }
}

}  // namespace

float RoundToE4m3(float x) {
  if (x == 0.0f || std::isnan(x)) return x;
  int exponent = 0;
  std::frexp(std::fabs(x), &exponent);  // |x| = m 2^exponent, m in [0.5, 1)
  // 3 mantissa bits below the leading one; subnormals (below 2^-6) step 2^-9.
  const int step = std::max(exponent - 1, -6) - 3;
  const float rounded = std::ldexp(std::nearbyint(std::ldexp(std::fabs(x), -step)), step);
  return std::copysign(std::min(rounded, kFp8Max), x);
}

float Pow2Ceil(float x) {
  int exponent = 0;
  const float mantissa = std::frexp(x, &exponent);
  return std::ldexp(1.0f, mantissa == 0.5f ? exponent - 1 : exponent);
}

float RoundToE2m1(float x) {
  // The codes' boundaries; at a boundary a tie goes to the even code (down
  // at 0.25, 1.25, 2.5, 5; up at 0.75, 1.75, 3.5), as transformers' codes do.
  static constexpr float kBoundary[7] = {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f};
  static constexpr bool kTieUp[7] = {false, true, false, true, false, true, false};
  static constexpr float kValue[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  const float magnitude = std::fabs(x);
  int code = 0;
  for (int i = 0; i < 7; ++i) {
    if (kTieUp[i] ? magnitude >= kBoundary[i] : magnitude > kBoundary[i]) code = i + 1;
  }
  return std::signbit(x) ? -kValue[code] : kValue[code];
}

void RoundTripFp8(std::span<float> x, uint32_t block) {
  RoundTrip(
      x, block, [](float amax) { return Pow2Ceil(std::max(amax, 1e-4f) * (1.0f / kFp8Max)); },
      RoundToE4m3, kFp8Max);
}

void RoundTripFp4E4m3Scale(std::span<float> x, uint32_t block) {
  RoundTrip(
      x, block,
      [](float amax) { return RoundToE4m3(std::max(amax, 6.0f * 0x1p-9f) / kFp4Max); },
      RoundToE2m1, kFp4Max);
}

void RoundTripFp4Pow2Scale(std::span<float> x, uint32_t block) {
  RoundTrip(
      x, block,
      [](float amax) { return Pow2Ceil(std::max(amax, 6.0f * 0x1p-126f) * (1.0f / kFp4Max)); },
      RoundToE2m1, kFp4Max);
}

}  // namespace warp::computed
