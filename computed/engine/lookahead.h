#pragma once

// Lookahead: when a MoE layer starts, before its attention, applies the
// layer's own router to an estimate of its router input (the input it would
// get if the attention added nothing, ResidualScheme::EstimateFfnInput) and
// hints the top experts as LOOKAHEAD reads. Demand reads cannot start before
// the router, so these fill the disk's idle time through the attention; the
// residual stream carries most of the router's input, so the guesses are
// right far more often than the next layer's router applied to this layer's
// input (the lookahead until 2026-12-05: recall at the gate 20-35% against
// 6-14% on random routing, docs/LEARNED.md). Owns its predictions and scores them when
// the layer routes for real. Never changes what is computed, only when bytes
// move.
//
// With a minimum precision, only the leading ranks whose predictions have
// been right often enough are hinted: the router's top-1 guess is right far
// more often than its 6th, and a wrong guess costs a whole record read.
// Every rank up to `width` is still predicted and scored, so a rank that
// becomes precise (a trained model, a repetitive prompt) is hinted again.
//
// With a depth of 2 the same estimate also predicts the next MoE layer,
// hinted after this layer's (the store reads lookahead hints in order), with
// a gate and figures of its own. Its unread hints are dropped when their
// layer passes (CancelSpeculative).
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
// in docs/LEARNED.md (0.8: reads <= 1.044x what the demand needed, overlap
// 0.92-0.97 at 4 GiB; 0.7 read 1.057x).
inline constexpr double kDefaultLookaheadPrecision = 0.8;

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
  // how many MoE layers to predict from one estimate, 1 or 2. `cache_records`:
  // the cache's slots, whose first wave (read_window.h) bounds each hint; 0: none.
  Lookahead(std::vector<const Router*> routers, uint32_t width, double min_precision,
            ExpertSource& experts, uint32_t depth = 1, uint64_t cache_records = 0);

  // Whether Hint(layer) predicts anything: `layer` is a MoE layer routed by
  // its input (a hash layer's experts are certain and were read at the
  // chunk's start) and the lookahead is on.
  bool Predicts(uint32_t layer) const;
  // Hints the experts MoE layer `layer` (and with a depth of 2 the next MoE
  // layer) would pick for x [n][hidden] of `tokens`: the estimate of the
  // layer's router input taken before its attention. REQUIRES: Predicts(layer).
  void Hint(uint32_t layer, std::span<const float> x, std::span<const int32_t> tokens);

  // Scores the predictions made for `layer` against its real routing, then
  // forgets them.
  void Score(uint32_t layer, const std::vector<Routing>& routed, uint64_t record_bytes);

  uint32_t depth() const { return static_cast<uint32_t>(ahead_.size()); }
  // The predictions of the `depth`-th MoE layer from one estimate (1: the
  // layer itself, 2: the next).
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

  // Whether `layer`'s routing can be predicted: a MoE layer, not hashed.
  bool Predictable(uint32_t layer) const;
  // The MoE layer after `layer` that a lookahead can predict; routers_.size() if none.
  uint32_t NextPredictable(uint32_t layer) const;
  // Predicts `target`'s routing of x at `ahead`, appending the keys to hint.
  void Predict(Ahead& ahead, uint32_t target, std::span<const float> x,
               std::span<const int32_t> tokens, std::vector<ExpertKey>& keys);
  void ScoreAhead(Ahead& ahead, uint32_t layer, const std::vector<Routing>& routed,
                  uint64_t record_bytes);

  std::vector<const Router*> routers_;
  uint32_t width_;
  ExpertSource& experts_;
  uint64_t cache_records_;
  std::vector<Ahead> ahead_;  // [depth - 1]
};

}  // namespace warp::computed
