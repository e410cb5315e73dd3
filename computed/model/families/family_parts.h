#pragma once

// Pieces several families share: config readers for the routing styles and
// the plan entries of the common mixers and FFNs. A family file composes
// these with its own.
//
// Thread-safe: pure functions.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/format/container_writer.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"
#include "nlohmann/json.hpp"

namespace warp::computed::family_parts {

using Json = nlohmann::ordered_json;

// head_dim, defaulting to hidden / heads.
absl::Status ParseHeadDim(const Json& json, ModelConfig& config);
// Sigmoid + bias, group-limited routing with shared experts, first_k_dense_replace
// and moe_layer_freq (deepseek_v3, glm4_moe).
absl::Status ParseGroupRouting(const Json& json, ModelConfig& config);

// "model.layers.N."
std::string LayerPrefix(uint32_t layer);

// A pre-norm decoder layer with input_layernorm / post_attention_layernorm.
LayerPlan PreNormLayer(uint32_t layer);
// GQA over the whole head_dim x partial_rotary_factor, rope_theta/YaRN of the config.
MixerPlan GqaMixer(const ModelConfig& config, uint32_t layer);
// A dense SwiGLU MLP `prefix` of `intermediate`.
FfnPlan DenseMlp(std::string prefix, uint64_t intermediate);
// The plan's head: lm_head.weight, or the embedding when tied.
ModelPlan PreNormModel(const ModelConfig& config);

// gate_proj [inter, hidden], up_proj [inter, hidden], down_proj [hidden, inter].
std::vector<TensorSpec> SwiGluExpertMatrices(const ModelConfig& config, TensorFormat format);

}  // namespace warp::computed::family_parts
