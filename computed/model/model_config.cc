#include "computed/model/model_config.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/family.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT

absl::Status ParseYarn(const Json& config, YarnScaling& yarn) {
  auto it = config.find("rope_scaling");
  if (it == config.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_object()) return KeyError("rope_scaling", "must be an object or null");
  const std::string type = it->value("type", it->value("rope_type", std::string()));
  if (type != "yarn") {
    return KeyError("rope_scaling", absl::StrCat("type \"", type, "\" is not supported (yarn)"));
  }
  yarn.enabled = true;
  WARP_ASSIGN_OR_RETURN(yarn.factor, DoubleOr(*it, "factor", 1.0));
  WARP_ASSIGN_OR_RETURN(yarn.original_max_position,
                        DoubleOr(*it, "original_max_position_embeddings", 4096));
  WARP_ASSIGN_OR_RETURN(yarn.beta_fast, DoubleOr(*it, "beta_fast", 32.0));
  WARP_ASSIGN_OR_RETURN(yarn.beta_slow, DoubleOr(*it, "beta_slow", 1.0));
  WARP_ASSIGN_OR_RETURN(yarn.mscale, DoubleOr(*it, "mscale", 1.0));
  WARP_ASSIGN_OR_RETURN(yarn.mscale_all_dim, DoubleOr(*it, "mscale_all_dim", 0.0));
  WARP_ASSIGN_OR_RETURN(yarn.truncate, BoolOr(*it, "truncate", true));
  WARP_ASSIGN_OR_RETURN(yarn.attention_factor, DoubleOr(*it, "attention_factor", 0.0));
  return absl::OkStatus();
}

// The keys every family reads the same way.
absl::Status ParseCommon(const Json& config, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.hidden_size, Uint(config, "hidden_size"));
  WARP_ASSIGN_OR_RETURN(out.num_layers, Uint(config, "num_hidden_layers"));
  WARP_ASSIGN_OR_RETURN(out.vocab_size, Uint(config, "vocab_size"));
  WARP_ASSIGN_OR_RETURN(out.num_heads, Uint(config, "num_attention_heads"));
  WARP_ASSIGN_OR_RETURN(out.num_kv_heads, UintOr(config, "num_key_value_heads", out.num_heads));
  // DeepSeek V4 has no dense MLP and no intermediate_size; Validate asks for it where one is.
  WARP_ASSIGN_OR_RETURN(out.intermediate_size, UintOr(config, "intermediate_size", 0));
  // gpt-oss's early configs say experts_per_token, Kimi-Linear's num_experts_per_token.
  WARP_ASSIGN_OR_RETURN(out.experts_per_token,
                        FirstUint(config, {"num_experts_per_tok", "experts_per_token",
                                           "num_experts_per_token"}));
  WARP_ASSIGN_OR_RETURN(out.tie_word_embeddings, BoolOr(config, "tie_word_embeddings", false));
  WARP_ASSIGN_OR_RETURN(double eps, DoubleOr(config, "rms_norm_eps", 1e-6));
  out.rms_norm_eps = static_cast<float>(eps);
  WARP_ASSIGN_OR_RETURN(out.rope_theta, DoubleOr(config, "rope_theta", 10000.0));
  return ParseYarn(config, out.yarn);
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
  for (uint32_t layer = 0; layer < config.num_layers; ++layer) {
    if (!config.IsMoeLayer(layer) && config.intermediate_size == 0) {
      return KeyError("intermediate_size", absl::StrCat("missing (layer ", layer, " is a dense MLP)"));
    }
  }
  if (config.experts_per_token == 0 || config.experts_per_token > config.num_experts) {
    return KeyError("num_experts_per_tok", absl::StrCat(config.experts_per_token, " is not in [1, ",
                                                        config.num_experts, "] routed experts"));
  }
  return absl::OkStatus();
}

}  // namespace

double YarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

std::string_view ArchitectureName(Architecture arch) { return FamilyOf(arch).name(); }

absl::StatusOr<Architecture> ParseArchitecture(std::string_view model_type) {
  if (model_type == "deepseek_v3" || model_type == "kimi_k2") return Architecture::kDeepseekV3;
  if (model_type == "qwen3_moe") return Architecture::kQwen3Moe;
  if (model_type == "glm4_moe") return Architecture::kGlm4Moe;
  if (model_type == "mixtral") return Architecture::kMixtral;
  if (model_type == "gpt_oss") return Architecture::kGptOss;
  if (model_type == "kimi_linear") return Architecture::kKimiLinear;
  if (model_type == "kimi_k3") return Architecture::kKimiK3;
  if (model_type == "deepseek_v4") return Architecture::kDeepseekV4;
  if (model_type == "glm5_next") return Architecture::kGlm5Next;
  return absl::InvalidArgumentError(absl::StrCat("architecture \"", std::string(model_type),
                                                 "\" is not supported (supported: deepseek_v3, "
                                                 "qwen3_moe, glm4_moe, mixtral, gpt_oss, kimi_linear, kimi_k3, deepseek_v4, glm5_next)"));
}

uint32_t ModelConfig::NumMoeLayers() const {
  uint32_t n = 0;
  for (bool moe : moe_layer) n += moe;
  return n;
}

absl::StatusOr<ModelConfig> ParseModelConfig(std::string_view model_type,
                                             const nlohmann::ordered_json& config) {
  if (!config.is_object()) return absl::InvalidArgumentError("config.json: must be an object");
  ModelConfig out;
  WARP_ASSIGN_OR_RETURN(out.arch, ParseArchitecture(model_type));
  const ModelFamily& family = FamilyOf(out.arch);
  WARP_ASSIGN_OR_RETURN(const Json* text, family.TextConfig(config));
  WARP_RETURN_IF_ERROR(ParseCommon(*text, out));
  WARP_RETURN_IF_ERROR(family.Parse(*text, out));
  WARP_RETURN_IF_ERROR(Validate(out));
  return out;
}

}  // namespace warp::computed
