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

// The tokens of one forward pass, in order: their ids (hash routing needs
// them), their positions, and the sequence (conversation) each belongs to —
// one sequence for a prompt chunk, several in runs for a batched step.
struct PassTokens {
  std::span<const int32_t> ids;
  std::span<const uint32_t> positions;
  std::span<const uint32_t> sequences;

  uint32_t size() const { return static_cast<uint32_t>(ids.size()); }
};

class Ffn {
 public:
  virtual ~Ffn() = default;

  // x: [n][hidden] normalized inputs of the n `tokens`; writes out
  // [n][hidden]. Each token's row depends on its own input only, so a batch
  // gives the bits of its tokens run alone. Fails (computing nothing more) if
  // an expert cannot be read or verified.
  virtual absl::Status Forward(std::span<const float> x, const PassTokens& tokens,
                               std::span<float> out) = 0;
};

}  // namespace warp::computed
