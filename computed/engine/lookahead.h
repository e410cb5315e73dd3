#pragma once

// Lookahead: while a layer's demand reads fly, applies the NEXT MoE layer's
// router to this layer's input and hints its top experts as LOOKAHEAD reads.
// Owns its predictions and scores them when the next layer routes for real.
// Never changes what is computed, only when bytes move.
//
// Thread-compatible: called from the forward pass only.

#include <cstdint>
#include <span>
#include <vector>

#include "common/store/expert_source.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/router.h"

namespace warp::computed {

class Lookahead {
 public:
  // `routers` [num_layers]: each MoE layer's router, nullptr for dense
  // layers. `width`: experts per token to hint; 0 turns the lookahead off.
  Lookahead(std::vector<const Router*> routers, uint32_t width, ExpertSource& experts);

  // Hints the experts the MoE layer after `layer` would pick for x [n][hidden]
  // of `tokens` (a hash layer's are certain and were read at the chunk's start).
  void Hint(uint32_t layer, std::span<const float> x, std::span<const int32_t> tokens);

  // Scores the predictions made for `layer` against its real routing, then
  // forgets them.
  void Score(uint32_t layer, const std::vector<Routing>& routed, uint64_t record_bytes);

  const LookaheadStats& stats() const { return stats_; }

 private:
  std::vector<const Router*> routers_;
  uint32_t width_;
  ExpertSource& experts_;
  std::vector<std::vector<std::vector<uint32_t>>> predicted_;  // [layer][token] -> experts
  LookaheadStats stats_;
};

}  // namespace warp::computed
