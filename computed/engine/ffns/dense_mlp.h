#pragma once

// A dense SwiGLU MLP, down(silu(gate x) * up x): the dense layers and the
// shared experts of MoE layers.
//
// Thread-compatible: one Forward at a time.

#include <string>

#include "computed/engine/ffn.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/trunk_weights.h"

namespace warp::computed {

class DenseMlp : public Ffn {
 public:
  // Binds `prefix`.{gate,up,down}_proj.weight; times itself into `seconds`.
  DenseMlp(const TrunkWeights& weights, const std::string& prefix, ThreadPool& pool,
           double& seconds);

  absl::Status Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                       std::span<float> out) override;

 private:
  ThreadPool& pool_;
  double& seconds_;
  kernels::MatrixView gate_, up_, down_;
};

}  // namespace warp::computed
