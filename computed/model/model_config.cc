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

absl::StatusOr<bool> GetBoolOr(const json& config, std::string_view key, bool fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return KeyError(key, "must be true or false");
  return it->get<bool>();
}

absl::Status ParseCommon(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.hidden_size, GetUint(config, "hidden_size"));
  WARP_ASSIGN_OR_RETURN(out.num_layers, GetUint(config, "num_hidden_layers"));
  WARP_ASSIGN_OR_RETURN(out.vocab_size, GetUint(config, "vocab_size"));
  WARP_ASSIGN_OR_RETURN(out.num_heads, GetUint(config, "num_attention_heads"));
  WARP_ASSIGN_OR_RETURN(out.num_kv_heads, GetUintOr(config, "num_key_value_heads", out.num_heads));
  WARP_ASSIGN_OR_RETURN(out.intermediate_size, GetUint(config, "intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, GetUint(config, "moe_intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.experts_per_token, GetUint(config, "num_experts_per_tok"));
  WARP_ASSIGN_OR_RETURN(out.tie_word_embeddings, GetBoolOr(config, "tie_word_embeddings", false));
  return absl::OkStatus();
}

absl::Status ParseDeepseekV3(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.num_experts, GetUint(config, "n_routed_experts"));
  WARP_ASSIGN_OR_RETURN(out.num_shared_experts, GetUintOr(config, "n_shared_experts", 0));
  WARP_ASSIGN_OR_RETURN(out.q_lora_rank, GetUintOr(config, "q_lora_rank", 0));
  WARP_ASSIGN_OR_RETURN(out.kv_lora_rank, GetUint(config, "kv_lora_rank"));
  WARP_ASSIGN_OR_RETURN(out.qk_nope_head_dim, GetUint(config, "qk_nope_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.qk_rope_head_dim, GetUint(config, "qk_rope_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.v_head_dim, GetUint(config, "v_head_dim"));
  WARP_ASSIGN_OR_RETURN(uint32_t first_dense, GetUintOr(config, "first_k_dense_replace", 0));
  WARP_ASSIGN_OR_RETURN(uint32_t freq, GetUintOr(config, "moe_layer_freq", 1));
  if (freq == 0) return KeyError("moe_layer_freq", "must be positive");
  out.moe_layer.assign(out.num_layers, false);
  for (uint32_t layer = first_dense; layer < out.num_layers; ++layer) {
    out.moe_layer[layer] = layer % freq == 0;
  }
  return absl::OkStatus();
}

absl::Status ParseQwen3Moe(const json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.num_experts, GetUint(config, "num_experts"));
  WARP_ASSIGN_OR_RETURN(
      out.head_dim, GetUintOr(config, "head_dim", out.hidden_size / std::max(1u, out.num_heads)));
  WARP_ASSIGN_OR_RETURN(uint32_t step, GetUintOr(config, "decoder_sparse_step", 1));
  if (step == 0) return KeyError("decoder_sparse_step", "must be positive");
  out.moe_layer.assign(out.num_layers, false);
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    // As Qwen3MoeDecoderLayer: sparse when (layer + 1) % step == 0 and not listed in
    // mlp_only_layers.
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
  }
  return "unknown";
}

absl::StatusOr<Architecture> ParseArchitecture(std::string_view model_type) {
  if (model_type == "deepseek_v3" || model_type == "kimi_k2") return Architecture::kDeepseekV3;
  if (model_type == "qwen3_moe") return Architecture::kQwen3Moe;
  return absl::InvalidArgumentError(absl::StrCat("architecture \"", std::string(model_type),
                                                 "\" is not supported (supported: deepseek_v3, "
                                                 "qwen3_moe)"));
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
  }
  WARP_RETURN_IF_ERROR(Validate(out));
  return out;
}

}  // namespace warp::computed
