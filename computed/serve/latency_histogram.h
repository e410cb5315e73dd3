#pragma once

// LatencyHistogram: a latency's distribution as Prometheus histograms keep
// it — counts per upper bound (`le`, in seconds; exposed cumulatively), the
// sum and the count. The bounds span a cached prompt's first token (5 ms) to
// a cold 100K-token prefill streaming its experts (10 minutes).
//
// Thread-compatible: EngineWorker updates it under its stats mutex.

#include <array>
#include <cstdint>

namespace warp::computed::serve {

class LatencyHistogram {
 public:
  static constexpr std::array<double, 16> kBounds = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
                                                     2.5,   5,    10,    30,   60,  120,  300, 600};

  void Observe(double seconds) {
    size_t i = 0;
    while (i < kBounds.size() && seconds > kBounds[i]) ++i;
    ++counts_[i];
    sum_ += seconds;
    ++count_;
  }

  // Observations of at most kBounds[i] (i == kBounds.size(): all).
  uint64_t CumulativeCount(size_t i) const {
    uint64_t total = 0;
    for (size_t j = 0; j <= i && j < counts_.size(); ++j) total += counts_[j];
    return total;
  }
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }

 private:
  std::array<uint64_t, kBounds.size() + 1> counts_{};  // the last: above every bound
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace warp::computed::serve
