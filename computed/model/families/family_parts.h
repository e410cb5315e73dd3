#pragma once

// Pieces several families share: config readers for the routing styles and
// the plan entries of the common mixers and FFNs. A family file composes
// these with its own.
//
// Thread-safe: pure functions.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/format/container_writer.h"
#include "computed/model/family.h"
#include "computed/model/kinds/expert_record.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"
#include "nlohmann/json.hpp"

namespace warp::computed::family_parts {

using Json = nlohmann::ordered_json;

// head_dim, defaulting to hidden / heads.
absl::Status ParseHeadDim(const Json& json, ModelConfig& config);
// The config.json names of the group-routing keys, which Kimi-Linear renames.
struct GroupRoutingKeys {
  const char* experts = "n_routed_experts";
  const char* shared_experts = "n_shared_experts";
  const char* n_group = "n_group";
  const char* renormalize = "norm_topk_prob";
};
// Sigmoid + bias, group-limited routing with shared experts, first_k_dense_replace
// and moe_layer_freq (deepseek_v3, glm4_moe, kimi_linear).
absl::Status ParseGroupRouting(const Json& json, ModelConfig& config,
                               const GroupRoutingKeys& keys = {});

// MLA's shape keys: q_lora_rank (absent or null: q_proj), kv_lora_rank,
// qk_nope_head_dim, qk_rope_head_dim, v_head_dim (deepseek_v3, Kimi).
absl::Status ParseMla(const Json& json, ModelConfig& config);

// hc_mult, hc_sinkhorn_iters, hc_eps (DeepSeek V4, GLM-5.3).
absl::Status ParseHyperConnections(const Json& json, HyperConnections& hc);
// The layer's hyper-connection sites under `layer_prefix`: hc_attn_{fn,base,scale}, hc_ffn_*.
void HyperSites(const std::string& layer_prefix, LayerPlan& plan);

// The release name of record matrix `matrix` where experts are numbered
// w1 (gate_proj), w3 (up_proj), w2 (down_proj): Mixtral, Kimi, DeepSeek V4.
const char* NumberedMatrix(std::string_view matrix);

// "model.layers.N."
std::string LayerPrefix(uint32_t layer);

// A pre-norm decoder layer with input_layernorm / post_attention_layernorm.
LayerPlan PreNormLayer(uint32_t layer);
// GQA over the whole head_dim x partial_rotary_factor, rope_theta/YaRN of the config.
MixerPlan GqaMixer(const ModelConfig& config, uint32_t layer);
// A dense SwiGLU MLP `prefix` of `intermediate`.
FfnPlan DenseMlp(std::string prefix, uint64_t intermediate);
// A pre-norm model whose head is lm_head.weight (or the tied embedding), with
// one PreNormLayer per decoder layer that `fill` completes (mixer, FFN).
ModelPlan PreNormModel(const ModelConfig& config,
                       const std::function<void(uint32_t layer, LayerPlan& plan)>& fill);
// DeepSeek-style routed experts at `prefix` (".gate.weight", the selection
// bias ".gate.e_score_correction_bias", shared experts when the config has them).
FfnPlan GroupRoutedMoe(const ModelConfig& config, const std::string& prefix);
// Softmax top-k routed experts at `prefix` (".gate.weight").
FfnPlan SoftmaxMoe(const std::string& prefix);

// A family whose records are SwiGLU experts of the hidden width, one tensor
// per matrix (`PREFIX.experts.E.{gate,up,down}_proj.weight`: deepseek_v3,
// qwen3_moe, glm4_moe; kimi_linear, mixtral, deepseek_v4 and glm5_next name them
// their own way in ExpertSlice).
class SwiGluFamily : public ModelFamily {
 public:
  // gate_proj [inter, hidden], up_proj [inter, hidden], down_proj [hidden, inter].
  std::vector<TensorSpec> ExpertMatrices(const ModelConfig& config,
                                         TensorFormat format) const override;
  CheckpointSlice ExpertSlice(const ModelConfig& config, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override;
};

}  // namespace warp::computed::family_parts
