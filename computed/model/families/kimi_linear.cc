#include "computed/model/families/kimi_linear.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

// One of linear_attn_config's 1-based layer lists, as 0-based flags.
absl::Status ParseLayerList(const Json& lac, std::string_view key, uint32_t num_layers,
                            std::vector<bool>& out) {
  const std::string where = absl::StrCat("linear_attn_config.", std::string(key));
  out.assign(num_layers, false);
  auto it = lac.find(std::string(key));
  if (it == lac.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) return KeyError(where, "must be an array of 1-based layer numbers");
  for (const Json& entry : *it) {
    // Any integer: JSON written from C++ literals holds them signed.
    if (!entry.is_number_integer() || entry.get<int64_t>() < 1 ||
        entry.get<int64_t>() > int64_t{num_layers}) {
      return KeyError(
          where, absl::StrCat(entry.dump(), " is not a layer (1-based: 1 .. ", num_layers, ")"));
    }
    out[entry.get<int64_t>() - 1] = true;
  }
  return absl::OkStatus();
}

absl::Status ParseLinearAttention(const Json& json, ModelConfig& out) {
  auto it = json.find("linear_attn_config");
  if (it == json.end() || it->is_null()) {
    return KeyError("linear_attn_config", "missing (Kimi-Linear's KDA layers are defined there)");
  }
  if (!it->is_object()) return KeyError("linear_attn_config", "must be an object");
  const Json& lac = *it;
  LinearAttention& kda = out.linear_attention;
  WARP_ASSIGN_OR_RETURN(kda.num_heads, Uint(lac, "num_heads"));
  WARP_ASSIGN_OR_RETURN(kda.head_dim, Uint(lac, "head_dim"));
  WARP_ASSIGN_OR_RETURN(kda.conv_kernel, Uint(lac, "short_conv_kernel_size"));
  if (kda.num_heads == 0 || kda.head_dim == 0 || kda.conv_kernel == 0) {
    return KeyError("linear_attn_config",
                    "num_heads, head_dim and short_conv_kernel_size must be positive");
  }
  // Kimi K3's lower-bounded decay and full-rank output gate.
  WARP_ASSIGN_OR_RETURN(double lower_bound, DoubleOr(lac, "gate_lower_bound", 0.0));
  if (lower_bound > 0) return KeyError("linear_attn_config.gate_lower_bound", "must be negative");
  kda.gate_lower_bound = static_cast<float>(lower_bound);
  WARP_ASSIGN_OR_RETURN(kda.full_rank_gate, BoolOr(lac, "use_full_rank_gate", false));
  WARP_RETURN_IF_ERROR(ParseLayerList(lac, "kda_layers", out.num_layers, out.kda_layer));
  std::vector<bool> full;
  WARP_RETURN_IF_ERROR(ParseLayerList(lac, "full_attn_layers", out.num_layers, full));
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    if (full[layer] && out.kda_layer[layer]) {
      return KeyError(
          "linear_attn_config",
          absl::StrCat("layer ", layer + 1, " is in both kda_layers and full_attn_layers"));
    }
  }
  return absl::OkStatus();
}

// Sigmoid routing with the selection bias (KimiMoEGate) under Kimi's key names.
absl::Status ParseRouting(const Json& json, ModelConfig& out) {
  auto activation = json.find("moe_router_activation_func");
  if (activation != json.end() && *activation != "sigmoid") {
    return KeyError("moe_router_activation_func",
                    absl::StrCat(activation->dump(), " is not supported (sigmoid)"));
  }
  return ParseGroupRouting(json, out,
                           {.experts = "num_experts",
                            .shared_experts = "num_shared_experts",
                            .n_group = "num_expert_group",
                            .renormalize = "moe_renormalize"});
}

class KimiLinear : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kKimiLinear; }
  std::string_view name() const override { return "kimi_linear"; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    return kimi::ParseKimiLinear(json, out);
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    return PreNormModel(c, [&](uint32_t layer, LayerPlan& l) {
      const std::string p = LayerPrefix(layer);
      l.mixer = kimi::Mixer(c, layer, p);
      l.ffn = c.IsMoeLayer(layer) ? GroupRoutedMoe(c, p + "block_sparse_moe")
                                  : DenseMlp(p + "mlp", c.intermediate_size);
    });
  }

  // The records keep SwiGluFamily's matrix names; the release calls them w1 (gate), w3 (up), w2
  // (down).
  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    return {.tensor = absl::StrCat(LayerPrefix(layer), "block_sparse_moe.experts.", expert, ".",
                                   NumberedMatrix(matrix), ".weight")};
  }
};

}  // namespace

namespace kimi {

absl::Status ParseKimiLinear(const Json& json, ModelConfig& out) {
  WARP_RETURN_IF_ERROR(ParseRouting(json, out));
  WARP_RETURN_IF_ERROR(ParseLinearAttention(json, out));
  WARP_RETURN_IF_ERROR(ParseMla(json, out));
  WARP_ASSIGN_OR_RETURN(bool nope, BoolOr(json, "mla_use_nope", false));
  out.mla_rope = !nope;
  return absl::OkStatus();
}

MixerPlan Mixer(const ModelConfig& c, uint32_t layer, const std::string& layer_prefix) {
  if (c.IsKdaLayer(layer)) {
    return MixerPlan{.prefix = layer_prefix + "self_attn.",
                     .params = KdaParams{.a_log_shape = {1, 1, c.linear_attention.num_heads, 1}}};
  }
  return MixerPlan{.prefix = layer_prefix + "self_attn.",
                   .rope = {.dim = c.mla_rope ? c.qk_rope_head_dim : 0,
                            .interleaved = true,
                            .theta = c.rope_theta,
                            .yarn = c.yarn},
                   .softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.qk_nope_head_dim +
                                                                        c.qk_rope_head_dim)),
                   .params = MlaParams{.output_gate = c.mla_output_gate}};
}

}  // namespace kimi

const ModelFamily& KimiLinearFamily() {
  static const KimiLinear family;
  return family;
}

}  // namespace warp::computed
