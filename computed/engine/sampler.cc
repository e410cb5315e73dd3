#include "computed/engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace warp::computed {
namespace {

constexpr double kZeroExponent = -746;  // exp(x) is 0 in double (and float) below it

}  // namespace

int32_t ArgmaxToken(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int32_t Sampler::Sample(std::span<const float> logits) {
  if (options_.temperature <= 0.0f || options_.top_k == 1) return ArgmaxToken(logits);
  // Candidates by decreasing logit (ties: lower id), cut to top-k. Tokens
  // whose probability is 0 at this temperature (a masked -inf logit) are
  // left out first: they could never be drawn, and a constrained reply masks
  // all but a few of 150K. Sorting (logit, id) pairs, not ids through the
  // logits, keeps the comparisons in cache; the order is the same total order.
  const float top = logits[ArgmaxToken(logits)];
  // NaN logits (a numeric blow-up) leave no candidate: the greedy token, as before.
  if (!std::isfinite(top)) return ArgmaxToken(logits);
  const double lowest = top + kZeroExponent * options_.temperature;  // exp of less is 0
  std::vector<std::pair<float, int32_t>> candidates;
  candidates.reserve(logits.size());
  for (size_t id = 0; id < logits.size(); ++id) {
    if (logits[id] >= lowest) {
      candidates.push_back({logits[id], static_cast<int32_t>(id)});
    }
  }
  auto before = [](const std::pair<float, int32_t>& a, const std::pair<float, int32_t>& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  const size_t k = options_.top_k == 0 ? candidates.size()
                                        : std::min<size_t>(options_.top_k, candidates.size());
  if (k < candidates.size()) {
    std::partial_sort(candidates.begin(), candidates.begin() + k, candidates.end(), before);
  } else {
    std::sort(candidates.begin(), candidates.end(), before);
  }
  std::vector<int32_t> ids(k);
  for (size_t i = 0; i < k; ++i) ids[i] = candidates[i].second;
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
