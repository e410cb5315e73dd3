#pragma once

// LightningIndexer: DeepSeek V4's choice, per query, of the CSA entries its
// attention reads. A compressor of its own (index_head_dim wide, with
// overlap) makes index keys over the same windows; a query at t scores entry
// s as sum_h w_h relu(q_h . k_s) / sqrt(index_head_dim), with
// q = rope(q_b(q_residual)) per index head and w = weights_proj(x) /
// sqrt(index_heads), over the entries closed by t, and keeps the top
// index_topk (ties to the lower index).
//
// Thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "common/compute/compute_context.h"
#include "computed/engine/mixers/kv_compressor.h"
#include "computed/engine/ops.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/kinds/compressed_mqa.h"
#include "computed/model/model_config.h"

namespace warp::computed {

class LightningIndexer {
 public:
  LightningIndexer(const ModelConfig& config, const TrunkWeights& weights,
                   const LightningIndexerTensors& tensors, uint32_t rate, const Rope& rope,
                   uint32_t context, ComputeContext& compute);

  // Projects the chunk's n tokens: x [n][hidden], q_residual [n][q_lora_rank].
  void Project(std::span<const float> x, std::span<const float> q_residual, uint32_t n);
  // Folds token t of the projected chunk (at `pos`) into the index keys and
  // returns the entries its attention reads.
  std::vector<uint32_t> Select(uint32_t t, uint32_t pos);

  KvCompressor& keys() { return keys_; }

 private:
  const CompressedAttention& shape_;
  const Rope& rope_;
  ComputeContext& compute_;
  kernels::MatrixView q_b_, weights_proj_;
  KvCompressor keys_;
  std::vector<float> q_, head_weights_, kv_, gate_;  // the projected chunk
};

}  // namespace warp::computed
