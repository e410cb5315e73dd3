#pragma once

// Lookahead: while a layer's demand reads fly, applies the NEXT MoE layer's
// router to this layer's input and hints its top experts as LOOKAHEAD reads.
// Owns its predictions and scores them when the next layer routes for real.
// Never changes what is computed, only when bytes move.
//
// With a minimum precision, only the leading ranks whose predictions have
// been right often enough are hinted: the router's top-1 guess is right far
// more often than its 6th, and a wrong guess costs a whole record read.
// Every rank up to `width` is still predicted and scored, so a rank that
// becomes precise (a trained model, a repetitive prompt) is hinted again.
//
// With a depth of 2 the same input also predicts the MoE layer after next,
// hinted after the next layer's (the store reads lookahead hints in order),
// with a gate and figures of its own: the disk gets work during the next
// layer's attention, when the next layer's demand cannot be known yet.
// Its unread hints are dropped when their layer passes (CancelSpeculative).
//
// Thread-compatible: called from the forward pass only.

#include <cstdint>
#include <span>
#include <vector>

#include "common/store/expert_source.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/router.h"

namespace warp::computed {

// The default minimum precision (`--lookahead-precision`); chosen by the A/B
// in docs/LEARNED.md.
inline constexpr double kDefaultLookaheadPrecision = 0.9;

// How often each rank of the predictions was right, and so how many leading
// ranks to hint. A rank is trusted until kWarmUp of its predictions have been
// scored, then hinted while every rank before it is right at least
// `min_precision` of the time.
//
// Thread-compatible.
class PrecisionGate {
 public:
  static constexpr uint64_t kWarmUp = 16;

  PrecisionGate(uint32_t ranks, double min_precision)
      : min_precision_(min_precision), scored_(ranks, 0), right_(ranks, 0) {}

  void Score(uint32_t rank, bool right) {
    ++scored_[rank];
    right_[rank] += right;
  }
  // Leading ranks to hint now (0..ranks); every rank if min_precision <= 0.
  uint32_t HintedRanks() const;

 private:
  double min_precision_;
  std::vector<uint64_t> scored_;  // [rank]: predictions scored
  std::vector<uint64_t> right_;   // [rank]: of them, routed for real
};

class Lookahead {
 public:
  // `routers` [num_layers]: each MoE layer's router, nullptr for dense
  // layers. `width`: experts per token predicted; 0 turns the lookahead off.
  // `min_precision` in [0, 1]: hint rank r (0-based) only while every rank up
  // to r has been right at least this often (0: hint all `width`). `depth`:
  // how many MoE layers ahead to predict, 1 or 2.
  Lookahead(std::vector<const Router*> routers, uint32_t width, double min_precision,
            ExpertSource& experts, uint32_t depth = 1);

  // Hints the experts the MoE layers after `layer` (up to `depth` of them)
  // would pick for x [n][hidden] of `tokens` (a hash layer's are certain and
  // were read at the chunk's start).
  void Hint(uint32_t layer, std::span<const float> x, std::span<const int32_t> tokens);

  // Scores the predictions made for `layer` against its real routing, then
  // forgets them.
  void Score(uint32_t layer, const std::vector<Routing>& routed, uint64_t record_bytes);

  uint32_t depth() const { return static_cast<uint32_t>(ahead_.size()); }
  // The predictions made `depth` MoE layers ahead (1: the next layer).
  const LookaheadStats& stats(uint32_t depth = 1) const { return ahead_.at(depth - 1).stats; }

 private:
  // The predictions of one depth: its own gate, since a guess two layers
  // ahead is right less often than one.
  struct Ahead {
    PrecisionGate gate;
    std::vector<std::vector<std::vector<uint32_t>>> predicted;  // [layer][token] -> experts
    std::vector<uint32_t> hinted_ranks;  // [layer]: ranks of `predicted` that were hinted
    LookaheadStats stats;
  };

  // The MoE layer after `layer` that a lookahead can predict (not hashed);
  // routers_.size() if none.
  uint32_t NextPredictable(uint32_t layer) const;
  // Predicts `target`'s routing of x at `ahead`, appending the keys to hint.
  void Predict(Ahead& ahead, uint32_t target, std::span<const float> x,
               std::span<const int32_t> tokens, std::vector<ExpertKey>& keys);
  void ScoreAhead(Ahead& ahead, uint32_t layer, const std::vector<Routing>& routed,
                  uint64_t record_bytes);

  std::vector<const Router*> routers_;
  uint32_t width_;
  ExpertSource& experts_;
  std::vector<Ahead> ahead_;  // [depth - 1]
};

}  // namespace warp::computed
