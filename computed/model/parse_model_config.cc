#include "computed/model/parse_model_config.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/format/manifest_checks.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/family.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT

constexpr std::string_view kConfigFile = "config.json";

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
  // Before the families size their per-layer tables from it.
  if (out.num_layers > kMaxLayers) {
    return KeyError("num_hidden_layers",
                    absl::StrCat(out.num_layers, " is above WARP's bound of ", kMaxLayers));
  }
  WARP_ASSIGN_OR_RETURN(out.vocab_size, Uint(config, "vocab_size"));
  WARP_ASSIGN_OR_RETURN(out.max_position_embeddings, UintOr(config, "max_position_embeddings", 0));
  WARP_ASSIGN_OR_RETURN(out.num_heads, Uint(config, "num_attention_heads"));
  WARP_ASSIGN_OR_RETURN(out.num_kv_heads, UintOr(config, "num_key_value_heads", out.num_heads));
  // DeepSeek V4 has no dense MLP and no intermediate_size; Validate asks for it where one is.
  WARP_ASSIGN_OR_RETURN(out.intermediate_size, UintOr(config, "intermediate_size", 0));
  // gpt-oss's early configs say experts_per_token, Kimi-Linear's num_experts_per_token.
  WARP_ASSIGN_OR_RETURN(
      out.experts_per_token,
      FirstUint(config, {"num_experts_per_tok", "experts_per_token", "num_experts_per_token"}));
  WARP_ASSIGN_OR_RETURN(out.tie_word_embeddings, BoolOr(config, "tie_word_embeddings", false));
  WARP_ASSIGN_OR_RETURN(double eps, DoubleOr(config, "rms_norm_eps", 1e-6));
  out.rms_norm_eps = static_cast<float>(eps);
  WARP_ASSIGN_OR_RETURN(out.rope_theta, DoubleOr(config, "rope_theta", 10000.0));
  return ParseYarn(config, out.yarn);
}

// "KEY: VALUE is not in RANGE" unless low < value <= high (low <= value with
// `low_closed`); NaN is never in.
absl::Status CheckRange(std::string_view key, double value, double low, double high,
                        bool low_closed = false) {
  const bool in = (low_closed ? value >= low : value > low) && value <= high;
  if (in) return absl::OkStatus();
  return KeyError(key,
                  absl::StrCat(value, " is not in ", low_closed ? "[" : "(", low, ", ", high, "]"));
}

// The floating-point hyper-parameters: out of these ranges the forward pass
// computes NaN or infinities (rope_theta 0, a negative epsilon, a scaling
// factor beyond float), which would be sampled as if they were logits.
absl::Status ValidateNumbers(const ModelConfig& config) {
  constexpr double kMaxFloat = 3.0e38;
  WARP_RETURN_IF_ERROR(CheckRange("rms_norm_eps", config.rms_norm_eps, 0, 1));
  WARP_RETURN_IF_ERROR(CheckRange("rope_theta", config.rope_theta, 0, 1e15));
  WARP_RETURN_IF_ERROR(CheckRange("partial_rotary_factor", config.partial_rotary_factor, 0, 1));
  WARP_RETURN_IF_ERROR(CheckRange("routed_scaling_factor", config.routed_scaling_factor, 0, 1e6));
  WARP_RETURN_IF_ERROR(CheckRange("swiglu_limit", config.swiglu_limit, 0, kMaxFloat, true));
  WARP_RETURN_IF_ERROR(CheckRange("swiglu_limit", config.glu.limit, 0, kMaxFloat, true));
  if (config.yarn.enabled) {
    const YarnScaling& yarn = config.yarn;
    // transformers' _validate_yarn_parameters: factor >= 1.
    WARP_RETURN_IF_ERROR(CheckRange("rope_scaling.factor", yarn.factor, 1, 1e6, true));
    WARP_RETURN_IF_ERROR(CheckRange("rope_scaling.original_max_position_embeddings",
                                    yarn.original_max_position, 1, 1e12, true));
    WARP_RETURN_IF_ERROR(CheckRange("rope_scaling.beta_fast", yarn.beta_fast, 0, 1e6));
    WARP_RETURN_IF_ERROR(CheckRange("rope_scaling.beta_slow", yarn.beta_slow, 0, 1e6));
    WARP_RETURN_IF_ERROR(CheckRange("rope_scaling.mscale", yarn.mscale, 0, 1e6, true));
    WARP_RETURN_IF_ERROR(
        CheckRange("rope_scaling.mscale_all_dim", yarn.mscale_all_dim, 0, 1e6, true));
    WARP_RETURN_IF_ERROR(
        CheckRange("rope_scaling.attention_factor", yarn.attention_factor, 0, 1e6, true));
  }
  if (config.compressed.o_groups > 0) {
    WARP_RETURN_IF_ERROR(
        CheckRange("compress_rope_theta", config.compressed.compress_rope_theta, 0, 1e15));
  }
  if (config.hyper.mult > 0) WARP_RETURN_IF_ERROR(CheckRange("hc_eps", config.hyper.eps, 0, 1));
  return absl::OkStatus();
}

absl::Status ValidateDimensions(const ModelConfig& c) {
  if (c.vocab_size > kMaxVocabulary) {
    return KeyError("vocab_size",
                    absl::StrCat(c.vocab_size, " is above WARP's bound of ", kMaxVocabulary));
  }
  const std::pair<std::string_view, uint32_t> widths[] = {
      {"hidden_size", c.hidden_size},
      {"num_attention_heads", c.num_heads},
      {"num_key_value_heads", c.num_kv_heads},
      {"head_dim", c.head_dim},
      {"intermediate_size", c.intermediate_size},
      {"moe_intermediate_size", c.moe_intermediate_size},
      {"q_lora_rank", c.q_lora_rank},
      {"kv_lora_rank", c.kv_lora_rank},
      {"qk_nope_head_dim", c.qk_nope_head_dim},
      {"qk_rope_head_dim", c.qk_rope_head_dim},
      {"v_head_dim", c.v_head_dim},
      {"sliding_window", c.sliding_window},
      {"linear_attn_config.num_heads", c.linear_attention.num_heads},
      {"linear_attn_config.head_dim", c.linear_attention.head_dim},
      {"linear_attn_config.short_conv_kernel_size", c.linear_attention.conv_kernel},
      {"index_head_dim", std::max(c.compressed.index_head_dim, c.dsa.index_head_dim)},
      {"index_n_heads", std::max(c.compressed.index_heads, c.dsa.index_heads)},
      {"routed_expert_hidden_size", c.latent_moe_dim},
  };
  for (const auto& [key, value] : widths) {
    if (value > kMaxDimension) {
      return KeyError(key, absl::StrCat(value, " is above WARP's bound of ", kMaxDimension));
    }
  }
  return absl::OkStatus();
}

absl::Status Validate(const ModelConfig& config) {
  WARP_RETURN_IF_ERROR(ValidateDimensions(config));
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
      return KeyError("intermediate_size",
                      absl::StrCat("missing (layer ", layer, " is a dense MLP)"));
    }
  }
  if (config.num_experts > kMaxExpertsPerBank) {
    return KeyError("num_experts", absl::StrCat(config.num_experts,
                                                " routed experts is above the "
                                                "container format's bound of ",
                                                kMaxExpertsPerBank));
  }
  if (config.experts_per_token == 0 || config.experts_per_token > config.num_experts) {
    return KeyError("num_experts_per_tok", absl::StrCat(config.experts_per_token, " is not in [1, ",
                                                        config.num_experts, "] routed experts"));
  }
  return ValidateNumbers(config);
}

absl::StatusOr<ModelConfig> ParseConfigObject(std::string_view model_type,
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

}  // namespace

absl::StatusOr<ModelConfig> ParseModelConfig(std::string_view model_type,
                                             const nlohmann::ordered_json& config,
                                             std::string_view source) {
  absl::StatusOr<ModelConfig> parsed = ParseConfigObject(model_type, config);
  if (parsed.ok() || source == kConfigFile) return parsed;
  // KeyError says "config.json: KEY: ..."; name the real file, and in a
  // manifest the keys are fields of its "config".
  std::string message(parsed.status().message());
  const std::string prefix = std::string(kConfigFile) + ": ";
  const bool keyed = message.starts_with(prefix);
  if (keyed) message.erase(0, prefix.size());
  const bool manifest = std::string_view(source).ends_with(std::string_view("manifest.json"));
  const std::string relabelled =
      absl::StrCat(std::string(source), keyed && manifest ? ": config." : ": ", message);
  return absl::Status(parsed.status().code(), relabelled);
}

}  // namespace warp::computed
