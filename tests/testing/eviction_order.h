#pragma once

// Test helper for EvictionOrder implementations.

#include <cstdint>
#include <vector>

#include "common/store/eviction_order.h"

namespace warp::testing {

// The experts of every held key, first victim first (tests use one layer).
inline std::vector<uint32_t> CandidateExperts(const EvictionOrder& order) {
  std::vector<uint32_t> experts;
  order.ForEachCandidate([&](const ExpertKey& key) {
    experts.push_back(key.expert);
    return true;
  });
  return experts;
}

}  // namespace warp::testing
