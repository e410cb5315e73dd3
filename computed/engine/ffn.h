#pragma once

// Ffn: the position-wise part of a decoder layer (a dense MLP, or routed
// experts read through the ExpertSource), built from the layer plan with its
// weights bound once.
//
// Thread-compatible: one Forward at a time.

#include <cstdint>
#include <span>

#include "absl/status/status.h"

namespace warp::computed {

class Ffn {
 public:
  virtual ~Ffn() = default;

  // x: [n][hidden] normalized inputs of the n `tokens` (their ids: hash
  // routing needs them) at first_pos ..; writes out [n][hidden]. Fails
  // (computing nothing more) if an expert cannot be read or verified.
  virtual absl::Status Forward(std::span<const float> x, std::span<const int32_t> tokens,
                               uint32_t first_pos, std::span<float> out) = 0;
};

}  // namespace warp::computed
