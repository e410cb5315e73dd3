#pragma once

// Multi-head latent attention with the absorbed latent cache (DeepSeek V3,
// Kimi, GLM-5.3), optionally with an output gate (Kimi K3) and GLM-5.3's
// pooled DSA indexer: its plan parameters, the trunk tensors it binds and the
// state it keeps. The math is engine/mixers/mla_attention.h and
// engine/mixers/pooled_indexer.h.
//
// Thread-compatible value types.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct MlaTensors;

struct MlaParams {
  using Tensors = MlaTensors;  // the tensors it binds
  static constexpr TrunkKind kTrunkKind = TrunkKind::kAttention;
  static constexpr bool kEndsInOutputProjection = true;  // o_proj (EarlyRoute)

  bool output_gate = false;  // `g_proj`: the heads' output * sigmoid(g_proj x) (Kimi K3)
  // q_a_layernorm / kv_a_layernorm: DeepSeek V3 and Kimi build them with the
  // default 1e-6, GLM-5.3 with rms_norm_eps.
  float latent_norm_eps = 1e-6f;
  bool dsa_indexer = false;  // GLM-5.3's DSA: `indexer.` picks the positions attended
};

// GLM-5.3's pooled indexer, under "PREFIX.indexer.".
struct PooledIndexerTensors {
  TensorRef q_b, wk, k_norm_weight, k_norm_bias, weights_proj, kpool_ape, kpool_gate;

  static PooledIndexerTensors Of(const ModelConfig& c, const std::string& prefix);
  void ForEach(TensorVisitor visit) const;  // as TrunkKind::kIndexer
};

// Under the mixer's prefix ("model.layers.N.self_attn.").
struct MlaTensors {
  // With a q LoRA (q_lora_rank > 0) q_a_proj, q_a_layernorm and q_b_proj;
  // without one q_b is q_proj and q_a, q_a_norm are absent.
  TensorRef q_a, q_a_norm, q_b;
  TensorRef kv_a, kv_a_norm;  // kv_a_proj_with_mqa, kv_a_layernorm
  // kv_b_proj [heads (nope + v), lora], or (kv_b_split) k_b_proj
  // [heads lora, nope] and v_b_proj [heads v, lora]: one of the two is absent.
  TensorRef kv_b, k_b, v_b;
  TensorRef gate;  // g_proj: params' output_gate
  TensorRef o;     // o_proj
  std::optional<PooledIndexerTensors> indexer;  // params' dsa_indexer

  static MlaTensors Of(const ModelConfig& c, const std::string& prefix, const MlaParams& params);
  void ForEach(TensorVisitor visit) const;
};

// The normalized latent and the rotated rope key per position (DSA: + the
// index keys and gates).
uint64_t StateBytes(const ModelConfig& c, const MlaParams& params, uint64_t context);

}  // namespace warp::computed
