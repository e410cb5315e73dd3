#pragma once

// EngramMemory: DeepSeek V4.1's engram at one layer, given the table rows
// its hash picked for each token (decoded: E4M3 x 2^(scale - 127)). The
// rows, concatenated, go through `wkv` to hc_mult keys k_c and one value v
// [hidden]; each hyper-connection stream h_c then adds g_c v with
//   d_c = sum_i h_c[i] (q_weight[c][i] k_weight[c][i]) k_c[i]
//         / (rms(h_c) rms(k_c) sqrt(hidden)),   rms with rms_norm_eps,
//   g_c = sigmoid(sign(d_c) sqrt(max(|d_c|, 1e-6))),
// before the layer's attention (transformers' DeepseekV41Engram).
//
// Thread-compatible: uses the context's pool.

#include <cstdint>
#include <span>

#include "common/compute/compute_context.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/layer_plan.h"

namespace warp::computed {

class EngramMemory {
 public:
  EngramMemory(const ModelConfig& config, const EngramPlan& plan, const TrunkWeights& weights,
               ComputeContext& compute);

  // rows [n][rows per token x head_dim]; streams [n][hc_mult][hidden].
  void Apply(std::span<const float> rows, uint32_t n, std::span<float> streams) const;

 private:
  uint32_t hidden_, streams_;
  float eps_;
  ComputeContext& compute_;
  kernels::MatrixView kv_;
  std::span<const float> q_weight_, k_weight_;  // [hc_mult][hidden]
};

}  // namespace warp::computed
