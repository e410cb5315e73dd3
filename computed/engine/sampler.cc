#include "computed/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace warp::computed {

int32_t ArgmaxToken(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t Sampler::Sample(std::span<const float> logits) {
  if (options_.temperature <= 0.0f || options_.top_k == 1) return ArgmaxToken(logits);
  // Candidates by decreasing logit (ties: lower id), cut to top-k.
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const size_t k = options_.top_k == 0 ? ids.size() : std::min<size_t>(options_.top_k, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  ids.resize(k);
  // Softmax at temperature, in double for a stable nucleus sum.
  std::vector<double> probs(k);
  double sum = 0;
  for (size_t i = 0; i < k; ++i) {
    probs[i] = std::exp((logits[ids[i]] - logits[ids[0]]) / options_.temperature);
    sum += probs[i];
  }
  // Nucleus: the smallest prefix whose probability reaches top_p.
  size_t keep = k;
  double mass = 0;
  for (size_t i = 0; i < k; ++i) {
    mass += probs[i] / sum;
    if (mass >= options_.top_p) {
      keep = i + 1;
      break;
    }
  }
  const double kept = std::accumulate(probs.begin(), probs.begin() + keep, 0.0);
  double target = std::uniform_real_distribution<double>(0.0, kept)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    target -= probs[i];
    if (target < 0) return ids[i];
  }
  return ids[keep - 1];
}

}  // namespace warp::computed
