#pragma once

// PooledIndexer: GLM-5.3's DSA token selection for its MLA layers. Index
// keys k = LayerNorm(wk x) (k_norm, eps 1e-6) are pooled by kpool
// consecutive positions: a complete pool's key is, per channel, the
// softmax(index_kpool_compress_gate x + ape)-weighted sum of its keys. A
// query at t scores each complete pool p as
// sum_h w_h relu(q_h . K_p / sqrt(index_head_dim)) with q = wq_b(q_residual)
// per index head and w = weights_proj(x) / sqrt(index_n_heads), keeps the
// best index_topk / kpool pools, and attends to their positions plus the
// incomplete pool it is in. Keys and gates are kept per position (as a KV
// cache, so a rewind can go anywhere); pool keys are rebuilt per query.
//
// Thread-compatible.

#include <cstdint>
#include <string>
#include <vector>

#include "common/compute/compute_context.h"
#include "computed/engine/layer_state.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/kinds/mla.h"
#include "computed/model/model_config.h"

namespace warp::computed {

class PooledIndexer {
 public:
  PooledIndexer(const ModelConfig& config, const TrunkWeights& weights,
                const PooledIndexerTensors& tensors, ComputeContext& compute);

  // Projects the chunk's n tokens: x [n][hidden], q_residual [n][q_lora_rank].
  void Project(std::span<const float> x, std::span<const float> q_residual, uint32_t n);
  // Writes token t's key and gate rows (at `pos`, kinds `key_kind` and
  // key_kind + 1 of `rows`) and returns the positions it attends to, ascending.
  std::vector<uint32_t> Select(uint32_t t, uint32_t pos, PositionRows& rows, size_t key_kind);

 private:
  const ModelConfig& c_;
  const DsaIndexer& shape_;
  ComputeContext& compute_;
  kernels::MatrixView q_b_, wk_, gate_, weights_proj_;
  std::span<const float> k_norm_w_, k_norm_b_, ape_;
  std::vector<float> q_, k_, g_, head_weights_;  // the projected chunk
};

}  // namespace warp::computed
