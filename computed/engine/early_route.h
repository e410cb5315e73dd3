#pragma once

// EarlyRoute: a pre-norm MoE layer's routing, known before its mixer's output
// projection has run, so that the layer's reads start while the projection
// computes. A layer's reads cannot start before its router, and without this
// the disk idles through the whole mixer (EFFICIENCY.md "Layers routed before
// the output projection"). The FFN reads g * x / rms(x) with
// x = h + W_o a + b, so the router's logits are
//   (W_r (g * h) + M a + W_r (g * b)) / rms(x),   M = W_r diag(g) W_o,
// with M [experts][W_o.cols] folded once at load. Where the routing rule is
// scale-free (Router::ScaleFree) these are the real experts but for
// rounding; elsewhere rms(x) is estimated as rms(h) times the ratio the
// layer's last pass had. The records go out CERTAIN; a wrong guess is one
// record read for nothing, counted (ForwardStats::early_unused). Never changes
// what is computed, only when bytes move. Opt-in (`--early-route`): the fold
// is 7.5 G multiply-adds a layer on a K2-sized attention, ~0.4 s at load.
//
// Thread-compatible: called from the forward pass only.

#include <cstdint>
#include <span>
#include <vector>

#include "common/store/expert_source.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/router.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/token_mixer.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Whether `layer` of `plan` gets an early route: a routed (not hashed) MoE
// layer of a pre-norm model whose mixer ends in an output projection
// (TokenMixer::output_projection: GQA, MLA, KDA).
bool HasEarlyRoute(const ModelPlan& plan, const LayerPlan& layer);
// The bytes of every early route's folded matrix (f32), which the planner
// counts beside the trunk.
uint64_t EarlyRouteBytes(const ModelConfig& config, const ModelPlan& plan);

class EarlyRoute {
 public:
  // Folds the layer's router through its mixer's output projection.
  // `ffn_norm`: g, the RMSNorm weight of the FFN's input. REQUIRES:
  // !router.hashed(); output.weight.rows == ffn_norm.size().
  EarlyRoute(uint32_t layer, float eps, const Router& router,
             const TokenMixer::OutputProjection& output, std::span<const float> ffn_norm,
             uint32_t top_k, ThreadPool& pool);

  // Whether to predict this pass: not while the layer's last passes were all
  // served from the cache (weights resident: the products would be pure
  // cost), but one pass in kProbeEvery even then, to notice misses again.
  bool Wanted();
  // Starts a pass from the stream h [n][hidden] before the mixer.
  void Begin(std::span<const float> h, uint32_t n);
  // a [m][W_o.cols]: the output projection's input for rows first ..
  // first + m - 1 of the pass. Returns the records they route to that no
  // earlier row of the pass did.
  std::vector<ExpertKey> Predict(std::span<const float> a, uint32_t first, uint32_t m);
  // The stream after the mixer, h + W_o a + b: the scale of the next estimate.
  void End(std::span<const float> stream);
  // The records the layer routed to, of which `uncached` were not cache hits:
  // scores this pass's prediction, if any, and decides the next Wanted().
  void Score(std::span<const ExpertKey> routed, uint64_t uncached, ForwardStats& stats);

  static constexpr uint32_t kQuietPasses = 4;  // all-hit passes before it rests
  static constexpr uint32_t kProbeEvery = 16;

 private:
  const uint32_t layer_;
  const float eps_;
  const Router& router_;
  const uint32_t top_k_;
  ThreadPool& pool_;
  const uint64_t hidden_;
  const uint32_t experts_;
  const bool scale_free_;
  std::vector<float> gain_;      // g
  std::vector<float> folded_;    // M = W_r diag(g) W_o
  std::vector<float> constant_;  // W_r (g * b), or zeros
  kernels::MatrixView folded_view_;

  // This pass.
  bool predicting_ = false;
  std::vector<float> stream_logits_;  // [n][experts]: W_r (g * h)
  std::vector<float> stream_rms_;     // [n]: rms(h)
  std::vector<bool> predicted_;       // [experts]
  std::vector<uint32_t> predicted_list_;
  // Across passes.
  float rms_ratio_ = 1.0f;  // rms(x) / rms(h) of the last token of the last pass
  uint32_t quiet_passes_ = 0;
  uint32_t resting_passes_ = 0;
};

}  // namespace warp::computed
