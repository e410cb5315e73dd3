#pragma once

// EarlyRoute: a pre-norm MoE layer's routing, known before its mixer's output
// projection has run, so that the layer's reads start while the projection
// computes. A layer's reads cannot start before its router, and without this
// the disk idles through the whole mixer (EFFICIENCY.md "Layers routed before
// the output projection"). The FFN reads g * x / rms(x) with
// x = h + W_o a + b, so the router's logits are
//   (W_r (g * h) + M a + W_r (g * b)) / rms(x),   M = W_r diag(g) W_o,
// with M [experts][W_o.cols] folded by the converter (a trunk tensor,
// EarlyRouteFoldSpecs) or, with `--early-route`, at load. Where the routing rule is
// scale-free (Router::ScaleFree) these are the real experts but for
// rounding; elsewhere rms(x) is estimated as rms(h) times the ratio the
// layer's last pass had. The records go out CERTAIN; a wrong guess is one
// record read for nothing, counted (ForwardStats::early_unused). Never changes
// what is computed, only when bytes move. On wherever the container holds the
// folds; folding at load (`--early-route`) is 7.5 G multiply-adds a layer on
// a K2-sized attention, ~0.4 s.
//
// Thread-compatible: called from the forward pass only.

#include <cstdint>
#include <span>
#include <vector>

#include "common/compute/compute_context.h"
#include "common/format/manifest.h"
#include "common/store/expert_source.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/router.h"
#include "computed/engine/token_mixer.h"
#include "computed/model/model_config.h"

namespace warp::computed {


// M = W_r diag(g) W_o, [router.rows][output.cols] in f32, band of W_o rows by
// band in a fixed order: the same bits on any pool, in the converter or at load.
// REQUIRES: router.cols == gain.size() == output.rows.
std::vector<float> FoldRouterThroughOutput(const kernels::MatrixView& router,
                                           std::span<const float> gain,
                                           const kernels::MatrixView& output, ComputeContext& compute);

// Which layers route early (Transformer::Options::early_routes).
enum class EarlyRoutes {
  kOff,     // none (`--no-early-route`)
  kStored,  // those whose fold the container holds (the default; `computed convert` writes them)
  kFolded,  // every layer that can, folding at load the ones the container lacks (`--early-route`)
};

class EarlyRoute {
 public:
  // The layer's router through its mixer's output projection: `stored`, the
  // container's fold (f32 [experts][output.weight.cols], outliving this), or
  // if null folded here. `ffn_norm`: g, the RMSNorm weight of the FFN's
  // input. REQUIRES: !router.hashed(); output.weight.rows == ffn_norm.size().
  EarlyRoute(uint32_t layer, float eps, const Router& router,
             const TokenMixer::OutputProjection& output, std::span<const float> ffn_norm,
             uint32_t top_k, ComputeContext& compute, const kernels::MatrixView* stored = nullptr);

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
  ComputeContext& compute_;
  const uint64_t hidden_;
  const uint32_t experts_;
  const bool scale_free_;
  std::vector<float> gain_;      // g
  std::vector<float> folded_;    // M = W_r diag(g) W_o, when folded here
  std::vector<float> constant_;  // W_r (g * b), or zeros
  kernels::MatrixView folded_view_;  // M: folded_ or the container's

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
