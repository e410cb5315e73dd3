#include "computed/model/model_config.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp::computed {
namespace {

using json = nlohmann::ordered_json;

absl::Status KeyError(std::string_view key, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: ", std::string(key), ": ", std::string(problem)));
}

absl::StatusOr<uint32_t> GetUint(const json& config, std::string_view key) {
  auto it = config.find(std::string(key));
  if (it == config.end()) return KeyError(key, "missing");
  // Literal JSON built in C++ stores small integers as signed; accept any non-negative one.
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<uint64_t>() > UINT32_MAX) {
    return KeyError(key, "must be a non-negative 32-bit integer");
  }
  return it->get<uint32_t>();
}

// A key that may be absent or null (e.g. q_lora_rank of DeepSeek-V2-Lite).
absl::StatusOr<uint32_t> GetUintOr(const json& config, std::string_view key, uint32_t fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  return GetUint(config, key);
}

absl::StatusOr<double> GetDoubleOr(const json& config, std::string_view key, double fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_number()) return KeyError(key, "must be a number");
  return it->get<double>();
}

absl::StatusOr<bool> GetBoolOr(const json& config, std::string_view key, bool fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return KeyError(key, "must be true or false");
  return it->get<bool>();
}

absl::Status ParseYarn(const json& config, YarnScaling& yarn) {
  auto it = config.find("rope_scaling");
  if (it == config.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) return KeyError("rope_scaling", "must be an object or null");
  const std::string type = it->value("type", it->value("rope_type", std::string()));
  if (type != "yarn") {
    return KeyError("rope_scaling", absl::StrCat("type \"", type, "\" is not supported (yarn)"));
  }
  yarn.enabled = true;
  WARP_ASSIGN_OR_RETURN(yarn.factor, GetDoubleOr(*it, "factor", 1.0));
  WARP_ASSIGN_OR_RETURN(yarn.original_max_position,
                        GetDoubleOr(*it, "original_max_position_embeddings", 4096));
  WARP_ASSIGN_OR_RETURN(yarn.beta_fast, GetDoubleOr(*it, "beta_fast", 32.0));
  WARP_ASSIGN_OR_RETURN(yarn.beta_slow, GetDoubleOr(*it, "beta_slow", 1.0));
  WARP_ASSIGN_OR_RETURN(yarn.mscale, GetDoubleOr(*it, "mscale", 1.0));
  WARP_ASSIGN_OR_RETURN(yarn.mscale_all_dim, GetDoubleOr(*it, "mscale_all_dim", 0.0));
  return absl::OkStatus();
}

absl::Status ParseCommon(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.hidden_size, GetUint(config, "hidden_size"));
  WARP_ASSIGN_OR_RETURN(out.num_layers, GetUint(config, "num_hidden_layers"));
  WARP_ASSIGN_OR_RETURN(out.vocab_size, GetUint(config, "vocab_size"));
  WARP_ASSIGN_OR_RETURN(out.num_heads, GetUint(config, "num_attention_heads"));
  WARP_ASSIGN_OR_RETURN(out.num_kv_heads, GetUintOr(config, "num_key_value_heads", out.num_heads));
  WARP_ASSIGN_OR_RETURN(out.intermediate_size, GetUint(config, "intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.experts_per_token, GetUint(config, "num_experts_per_tok"));
  WARP_ASSIGN_OR_RETURN(out.tie_word_embeddings, GetBoolOr(config, "tie_word_embeddings", false));
  WARP_ASSIGN_OR_RETURN(double eps, GetDoubleOr(config, "rms_norm_eps", 1e-6));
  out.rms_norm_eps = static_cast<float>(eps);
  WARP_ASSIGN_OR_RETURN(out.rope_theta, GetDoubleOr(config, "rope_theta", 10000.0));
  return ParseYarn(config, out.yarn);
}

absl::Status ParseHeadDim(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(
      out.head_dim, GetUintOr(config, "head_dim", out.hidden_size / std::max(1u, out.num_heads)));
  return absl::OkStatus();
}

// Sigmoid + bias, group-limited routing with shared experts (deepseek_v3, glm4_moe).
absl::Status ParseGroupRouting(const json& config, ModelConfig& out) {
  out.router = RouterKind::kSigmoidGroupTopK;
  WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, GetUint(config, "moe_intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.num_experts, GetUint(config, "n_routed_experts"));
  WARP_ASSIGN_OR_RETURN(out.num_shared_experts, GetUintOr(config, "n_shared_experts", 0));
  WARP_ASSIGN_OR_RETURN(out.n_group, GetUintOr(config, "n_group", 1));
  WARP_ASSIGN_OR_RETURN(out.topk_group, GetUintOr(config, "topk_group", 1));
  WARP_ASSIGN_OR_RETURN(out.norm_topk_prob, GetBoolOr(config, "norm_topk_prob", true));
  WARP_ASSIGN_OR_RETURN(double scaling, GetDoubleOr(config, "routed_scaling_factor", 1.0));
  out.routed_scaling_factor = static_cast<float>(scaling);
  if (out.n_group == 0 || out.num_experts % out.n_group != 0 || out.topk_group == 0 ||
      out.topk_group > out.n_group) {
    return KeyError("n_group",
                    "n_group must divide n_routed_experts, and 0 < topk_group <= n_group");
  }
  WARP_ASSIGN_OR_RETURN(uint32_t first_dense, GetUintOr(config, "first_k_dense_replace", 0));
  WARP_ASSIGN_OR_RETURN(uint32_t freq, GetUintOr(config, "moe_layer_freq", 1));
  if (freq == 0) return KeyError("moe_layer_freq", "must be positive");
  out.moe_layer.assign(out.num_layers, false);
  for (uint32_t layer = first_dense; layer < out.num_layers; ++layer) {
    out.moe_layer[layer] = layer % freq == 0;
  }
  return absl::OkStatus();
}

absl::Status ParseDeepseekV3(const json& config, ModelConfig& out) {
  WARP_RETURN_IF_ERROR(ParseGroupRouting(config, out));
  out.rope_interleaved = true;
  WARP_ASSIGN_OR_RETURN(out.q_lora_rank, GetUintOr(config, "q_lora_rank", 0));
  WARP_ASSIGN_OR_RETURN(out.kv_lora_rank, GetUint(config, "kv_lora_rank"));
  WARP_ASSIGN_OR_RETURN(out.qk_nope_head_dim, GetUint(config, "qk_nope_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.qk_rope_head_dim, GetUint(config, "qk_rope_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.v_head_dim, GetUint(config, "v_head_dim"));
  return absl::OkStatus();
}

absl::Status ParseGlm4Moe(const json& config, ModelConfig& out) {
  WARP_RETURN_IF_ERROR(ParseGroupRouting(config, out));
  WARP_RETURN_IF_ERROR(ParseHeadDim(config, out));
  WARP_ASSIGN_OR_RETURN(out.attention_bias, GetBoolOr(config, "attention_bias", false));
  WARP_ASSIGN_OR_RETURN(out.qk_norm, GetBoolOr(config, "use_qk_norm", false));
  WARP_ASSIGN_OR_RETURN(double factor, GetDoubleOr(config, "partial_rotary_factor", 0.5));
  out.partial_rotary_factor = static_cast<float>(factor);
  return absl::OkStatus();
}

absl::Status ParseQwen3Moe(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, GetUint(config, "moe_intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.num_experts, GetUint(config, "num_experts"));
  WARP_ASSIGN_OR_RETURN(out.norm_topk_prob, GetBoolOr(config, "norm_topk_prob", false));
  out.qk_norm = true;
  WARP_RETURN_IF_ERROR(ParseHeadDim(config, out));
  WARP_ASSIGN_OR_RETURN(uint32_t step, GetUintOr(config, "decoder_sparse_step", 1));
  if (step == 0) return KeyError("decoder_sparse_step", "must be positive");
  out.moe_layer.assign(out.num_layers, false);
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    // As Qwen3MoeDecoderLayer: sparse when (layer + 1) % step == 0 and not in mlp_only_layers.
    out.moe_layer[layer] = (layer + 1) % step == 0;
  }
  if (auto it = config.find("mlp_only_layers"); it != config.end() && !it->is_null()) {
    if (!it->is_array()) return KeyError("mlp_only_layers", "must be an array");
    for (const json& layer : *it) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0 ||
          layer.get<uint64_t>() >= out.num_layers) {
        return KeyError("mlp_only_layers", "must hold layer indices below num_hidden_layers");
      }
      out.moe_layer[layer.get<uint32_t>()] = false;
    }
  }
  return absl::OkStatus();
}

absl::Status ParseMixtral(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.num_experts, GetUint(config, "num_local_experts"));
  out.moe_intermediate_size = out.intermediate_size;  // Mixtral's experts are its MLPs
  out.norm_topk_prob = true;  // MixtralSparseMoeBlock always renormalizes the top-k
  WARP_RETURN_IF_ERROR(ParseHeadDim(config, out));
  out.moe_layer.assign(out.num_layers, true);
  return absl::OkStatus();
}

absl::Status Validate(const ModelConfig& config) {
  if (config.hidden_size == 0 || config.num_layers == 0 || config.vocab_size == 0 ||
      config.num_heads == 0) {
    return KeyError("hidden_size/num_hidden_layers/vocab_size/num_attention_heads",
                    "must be positive");
  }
  if (config.num_kv_heads == 0 || config.num_heads % config.num_kv_heads != 0) {
    return KeyError("num_key_value_heads", "must divide num_attention_heads");
  }
  if (config.experts_per_token == 0 || config.experts_per_token > config.num_experts) {
    return KeyError("num_experts_per_tok", absl::StrCat(config.experts_per_token, " is not in [1, ",
                                                        config.num_experts, "] routed experts"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string_view ArchitectureName(Architecture arch) {
  switch (arch) {
    case Architecture::kDeepseekV3:
      return "deepseek_v3";
    case Architecture::kQwen3Moe:
      return "qwen3_moe";
    case Architecture::kGlm4Moe:
      return "glm4_moe";
    case Architecture::kMixtral:
      return "mixtral";
  }
  return "unknown";
}

absl::StatusOr<Architecture> ParseArchitecture(std::string_view model_type) {
  if (model_type == "deepseek_v3" || model_type == "kimi_k2") return Architecture::kDeepseekV3;
  if (model_type == "qwen3_moe") return Architecture::kQwen3Moe;
  if (model_type == "glm4_moe") return Architecture::kGlm4Moe;
  if (model_type == "mixtral") return Architecture::kMixtral;
  return absl::InvalidArgumentError(absl::StrCat("architecture \"", std::string(model_type),
                                                 "\" is not supported (supported: deepseek_v3, "
                                                 "qwen3_moe, glm4_moe, mixtral)"));
}

uint32_t ModelConfig::NumMoeLayers() const {
  uint32_t n = 0;
  for (bool moe : moe_layer) n += moe;
  return n;
}

uint64_t ModelConfig::KvBytesPerToken() const {
  const uint64_t per_layer = arch == Architecture::kDeepseekV3
                                 ? uint64_t{kv_lora_rank} + qk_rope_head_dim
                                 : 2 * uint64_t{num_kv_heads} * head_dim;
  return per_layer * sizeof(float) * num_layers;
}

absl::StatusOr<ModelConfig> ParseModelConfig(std::string_view model_type,
                                             const nlohmann::ordered_json& config) {
  if (!config.is_object()) return absl::InvalidArgumentError("config.json: must be an object");
  ModelConfig out;
  WARP_ASSIGN_OR_RETURN(out.arch, ParseArchitecture(model_type));
  WARP_RETURN_IF_ERROR(ParseCommon(config, out));
  switch (out.arch) {
    case Architecture::kDeepseekV3:
      WARP_RETURN_IF_ERROR(ParseDeepseekV3(config, out));
      break;
    case Architecture::kQwen3Moe:
      WARP_RETURN_IF_ERROR(ParseQwen3Moe(config, out));
      break;
    case Architecture::kGlm4Moe:
      WARP_RETURN_IF_ERROR(ParseGlm4Moe(config, out));
      break;
    case Architecture::kMixtral:
      WARP_RETURN_IF_ERROR(ParseMixtral(config, out));
      break;
  }
  WARP_RETURN_IF_ERROR(Validate(out));
  return out;
}

}  // namespace warp::computed
