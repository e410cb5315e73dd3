#pragma once

// Grouped-query softmax attention with a K/V cache, optionally sliding and
// with sinks (Llama, Qwen3, Mixtral, GLM-4.5, gpt-oss): its plan parameters,
// the trunk tensors it binds and the state it keeps. The math is
// engine/mixers/gqa_attention.h.
//
// Thread-compatible value types.

#include <cstdint>
#include <string>
#include <string_view>

#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct GqaTensors;

struct GqaParams {
  using Tensors = GqaTensors;  // the tensors it binds
  static constexpr TrunkKind kTrunkKind = TrunkKind::kAttention;
  static constexpr bool kEndsInOutputProjection = true;  // o_proj (EarlyRoute)

  uint32_t sliding_window = 0;  // 0: full attention; else keys of the last W positions
  bool qkv_bias = false;        // q/k/v_proj.bias
  bool o_bias = false;          // o_proj.bias
  bool qk_norm = false;         // q_norm / k_norm per head before rope
  bool sinks = false;           // `sinks` [heads]: a logit per head that joins the softmax
};

// Under the mixer's prefix ("model.layers.N.self_attn.").
struct GqaTensors {
  TensorRef q, k, v, o;                      // q/k/v/o_proj.weight
  TensorRef q_bias, k_bias, v_bias, o_bias;  // params' qkv_bias, o_bias
  TensorRef q_norm, k_norm;                  // params' qk_norm: [head_dim]
  TensorRef sinks;                           // [heads]

  static GqaTensors Of(const ModelConfig& c, const std::string& prefix, const GqaParams& params);
  void ForEach(TensorVisitor visit) const;
};

// K and V per kv head; a sliding layer keeps only its window.
uint64_t StateBytes(const ModelConfig& c, const GqaParams& params, uint64_t context);

}  // namespace warp::computed
