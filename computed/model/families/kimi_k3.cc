#include "computed/model/families/kimi_k3.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"
#include "computed/model/families/kimi_linear.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

// The multimodal wrapper's text model.
constexpr const char* kRoot = "language_model.";

std::string KimiLayerPrefix(uint32_t layer) {
  return absl::StrCat(kRoot, "model.layers.", layer, ".");
}

absl::Status ParseSitu(const Json& json, GluActivation& glu) {
  auto act = json.find("hidden_act");
  if (act == json.end() || *act == "silu") return absl::OkStatus();
  if (*act != "situ")
    return KeyError("hidden_act", absl::StrCat(act->dump(), " is not silu or situ"));
  glu.situ = true;
  WARP_ASSIGN_OR_RETURN(double beta, DoubleOr(json, "activation_situ_beta", 0.0));
  WARP_ASSIGN_OR_RETURN(double linear_beta, DoubleOr(json, "activation_situ_linear_beta", 0.0));
  if (beta <= 0) return KeyError("activation_situ_beta", "must be positive for hidden_act situ");
  glu.beta = static_cast<float>(beta);
  glu.linear_beta = static_cast<float>(linear_beta);
  return absl::OkStatus();
}

class KimiK3 : public ModelFamily {
 public:
  Architecture arch() const override { return Architecture::kKimiK3; }
  std::string_view name() const override { return "kimi_k3"; }

  absl::StatusOr<const Json*> TextConfig(const Json& config) const override {
    auto it = config.find("text_config");
    if (it == config.end() || !it->is_object()) {
      return KeyError("text_config", "missing (Kimi K3 keeps its text model's keys there)");
    }
    return &*it;
  }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_RETURN_IF_ERROR(kimi::ParseKimiLinear(json, out));
    WARP_RETURN_IF_ERROR(ParseSitu(json, out.glu));
    WARP_ASSIGN_OR_RETURN(out.mla_output_gate, BoolOr(json, "mla_use_output_gate", false));
    WARP_ASSIGN_OR_RETURN(out.latent_moe_dim, UintOr(json, "routed_expert_hidden_size", 0));
    WARP_ASSIGN_OR_RETURN(out.latent_moe_norm, BoolOr(json, "latent_moe_use_norm", false));
    WARP_ASSIGN_OR_RETURN(out.attn_res_block, UintOr(json, "attn_res_block_size", 0));
    return absl::OkStatus();
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    ModelPlan plan;
    plan.embed = absl::StrCat(kRoot, "model.embed_tokens.weight");
    plan.final_norm = absl::StrCat(kRoot, "model.norm.weight");
    plan.head = c.tie_word_embeddings ? plan.embed : absl::StrCat(kRoot, "lm_head.weight");
    if (c.attn_res_block > 0) {
      plan.residual = ResidualKind::kAttnRes;
      plan.attn_res_block = c.attn_res_block;
      plan.final_mix = {.norm = absl::StrCat(kRoot, "model.output_attn_res_norm.weight"),
                        .proj = absl::StrCat(kRoot, "model.output_attn_res_proj.weight")};
    }
    for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
      const std::string p = KimiLayerPrefix(layer);
      LayerPlan l{.input_norm = p + "input_layernorm.weight",
                  .post_norm = p + "post_attention_layernorm.weight",
                  .mixer = kimi::Mixer(c, layer, p)};
      // [heads], or zero-padded as colibri reads the release (96 heads in 128 entries).
      if (auto* kda_params = std::get_if<KdaParams>(&l.mixer.params)) {
        kda_params->a_log_shape = {c.linear_attention.num_heads};
        kda_params->a_log_zero_padded = true;
      }
      if (c.attn_res_block > 0) {
        l.mixer_mix = {.norm = p + "self_attention_res_norm.weight",
                       .proj = p + "self_attention_res_proj.weight"};
        l.ffn_mix = {.norm = p + "mlp_res_norm.weight", .proj = p + "mlp_res_proj.weight"};
      }
      l.ffn = c.IsMoeLayer(layer) ? LatentMoe(c, p + "block_sparse_moe")
                                  : DenseMlp(p + "mlp", c.intermediate_size);
      l.ffn.glu = c.glu;
      plan.layers.push_back(std::move(l));
    }
    return plan;
  }

  // gate_proj / up_proj [moe_intermediate, latent], down_proj [latent, moe_intermediate].
  std::vector<TensorSpec> ExpertMatrices(const ModelConfig& c, TensorFormat format) const override {
    const uint64_t width = ExpertWidth(c), inter = c.moe_intermediate_size;
    return SwiGluRecord(inter, width, format);
  }

  // One tensor per expert and matrix, or its compressed-tensors MXFP4 pair.
  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    const std::string base = absl::StrCat(KimiLayerPrefix(layer), "block_sparse_moe.experts.",
                                          expert, ".", NumberedMatrix(matrix), ".");
    return {.tensor = base + "weight",
            .mxfp4_blocks = base + "weight_packed",
            .mxfp4_scales = base + "weight_scale"};
  }

 private:
  static uint64_t ExpertWidth(const ModelConfig& c) {
    return c.latent_moe_dim > 0 ? c.latent_moe_dim : c.hidden_size;
  }

  static FfnPlan LatentMoe(const ModelConfig& c, const std::string& prefix) {
    FfnPlan ffn = GroupRoutedMoe(c, prefix);
    if (c.latent_moe_dim > 0) {
      ffn.latent_dim = c.latent_moe_dim;
      ffn.latent_down = prefix + ".routed_expert_down_proj.weight";
      if (c.latent_moe_norm) ffn.latent_norm = prefix + ".routed_expert_norm.weight";
      ffn.latent_up = prefix + ".routed_expert_up_proj.weight";
    }
    return ffn;
  }
};

}  // namespace

const ModelFamily& KimiK3Family() {
  static const KimiK3 family;
  return family;
}

}  // namespace warp::computed
