#pragma once

// Self-attention of one decoder layer with its KV cache: MLA (deepseek_v3),
// which caches the normalized compressed latent and the rotated rope key and
// attends in the latent space (absorbed projections), and GQA (qwen3_moe,
// glm4_moe, mixtral), which caches K and V per kv head. The cache is float32,
// as computed/model/model_config.h's KvBytesPerToken counts it.
//
// Thread-compatible: one forward pass at a time.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "computed/engine/ops.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/model_config.h"

namespace warp::computed {

class Attention {
 public:
  virtual ~Attention() = default;

  // x: [n][hidden] normalized inputs of tokens at positions first_pos ..
  // first_pos + n - 1; writes out [n][hidden]. Every token attends to the
  // cache up to its own position, so a chunk gives the bits of n single steps.
  virtual void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                       std::span<float> out) = 0;

  // Creates the attention of `layer`. REQUIRES: the trunk holds its tensors.
  static std::unique_ptr<Attention> Create(const ModelConfig& config, const TrunkWeights& weights,
                                           uint32_t layer, uint32_t max_positions,
                                           ThreadPool& pool);
};

}  // namespace warp::computed
