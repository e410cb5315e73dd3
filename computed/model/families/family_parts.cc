#include "computed/model/families/family_parts.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"

namespace warp::computed::family_parts {

using namespace config_fields;  // NOLINT: the readers are this file's vocabulary

absl::Status ParseHeadDim(const Json& json, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.head_dim,
                        UintOr(json, "head_dim", out.hidden_size / std::max(1u, out.num_heads)));
  return absl::OkStatus();
}

absl::Status ParseGroupRouting(const Json& json, ModelConfig& out, const GroupRoutingKeys& keys) {
  out.router = RouterKind::kSigmoidGroupTopK;
  WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, Uint(json, "moe_intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.num_experts, Uint(json, keys.experts));
  WARP_ASSIGN_OR_RETURN(out.num_shared_experts, UintOr(json, keys.shared_experts, 0));
  WARP_ASSIGN_OR_RETURN(out.n_group, UintOr(json, keys.n_group, 1));
  WARP_ASSIGN_OR_RETURN(out.topk_group, UintOr(json, "topk_group", 1));
  WARP_ASSIGN_OR_RETURN(out.norm_topk_prob, BoolOr(json, keys.renormalize, true));
  // Never assumed: releases of one family differ (Kimi-Linear 2.446, DeepSeek V3 2.5).
  WARP_ASSIGN_OR_RETURN(double scaling, DoubleOr(json, "routed_scaling_factor", 1.0));
  out.routed_scaling_factor = static_cast<float>(scaling);
  if (out.n_group == 0 || out.num_experts % out.n_group != 0 || out.topk_group == 0 ||
      out.topk_group > out.n_group) {
    return KeyError(keys.n_group, absl::StrCat("must divide ", keys.experts,
                                               ", and 0 < topk_group <= ", keys.n_group));
  }
  WARP_ASSIGN_OR_RETURN(uint32_t first_dense, UintOr(json, "first_k_dense_replace", 0));
  WARP_ASSIGN_OR_RETURN(uint32_t freq, UintOr(json, "moe_layer_freq", 1));
  if (freq == 0) return KeyError("moe_layer_freq", "must be positive");
  out.moe_layer.assign(out.num_layers, false);
  for (uint32_t layer = first_dense; layer < out.num_layers; ++layer) {
    out.moe_layer[layer] = layer % freq == 0;
  }
  return absl::OkStatus();
}

absl::Status ParseMla(const Json& json, ModelConfig& out) {
  WARP_ASSIGN_OR_RETURN(out.q_lora_rank, UintOr(json, "q_lora_rank", 0));
  WARP_ASSIGN_OR_RETURN(out.kv_lora_rank, Uint(json, "kv_lora_rank"));
  WARP_ASSIGN_OR_RETURN(out.qk_nope_head_dim, Uint(json, "qk_nope_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.qk_rope_head_dim, Uint(json, "qk_rope_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.v_head_dim, Uint(json, "v_head_dim"));
  WARP_ASSIGN_OR_RETURN(out.kv_b_split, BoolOr(json, "kv_b_split", false));
  return absl::OkStatus();
}

absl::Status ParseHyperConnections(const Json& json, HyperConnections& hc) {
  WARP_ASSIGN_OR_RETURN(hc.mult, Uint(json, "hc_mult"));
  WARP_ASSIGN_OR_RETURN(hc.sinkhorn_iters, UintOr(json, "hc_sinkhorn_iters", 20));
  WARP_ASSIGN_OR_RETURN(double eps, DoubleOr(json, "hc_eps", 1e-6));
  hc.eps = static_cast<float>(eps);
  if (hc.mult == 0 || hc.sinkhorn_iters == 0) {
    return KeyError("hc_mult/hc_sinkhorn_iters", "must be positive");
  }
  return absl::OkStatus();
}

void HyperSites(const std::string& p, LayerPlan& l) {
  l.mixer_hc = {.fn = p + "hc_attn_fn", .base = p + "hc_attn_base", .scale = p + "hc_attn_scale"};
  l.ffn_hc = {.fn = p + "hc_ffn_fn", .base = p + "hc_ffn_base", .scale = p + "hc_ffn_scale"};
}

const char* NumberedMatrix(std::string_view matrix) {
  return matrix == RecordMatrix::kGate ? "w1" : matrix == RecordMatrix::kUp ? "w3" : "w2";
}

std::string LayerPrefix(uint32_t layer) { return absl::StrCat("model.layers.", layer, "."); }

LayerPlan PreNormLayer(uint32_t layer) {
  const std::string p = LayerPrefix(layer);
  return LayerPlan{.input_norm = p + "input_layernorm.weight",
                   .post_norm = p + "post_attention_layernorm.weight"};
}

MixerPlan GqaMixer(const ModelConfig& c, uint32_t layer) {
  return MixerPlan{
      .prefix = LayerPrefix(layer) + "self_attn.",
      .rope = {.dim = static_cast<uint32_t>(c.head_dim * c.partial_rotary_factor) / 2 * 2,
               .interleaved = false,
               .theta = c.rope_theta,
               .yarn = c.yarn},
      .softmax_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim)),
      .params = GqaParams{.qkv_bias = c.attention_bias, .qk_norm = c.qk_norm}};
}

FfnPlan DenseMlp(std::string prefix, uint64_t intermediate) {
  return FfnPlan{.kind = FfnKind::kDenseMlp, .prefix = std::move(prefix),
                 .intermediate = intermediate};
}

ModelPlan PreNormModel(const ModelConfig& c,
                       const std::function<void(uint32_t layer, LayerPlan& plan)>& fill) {
  ModelPlan plan;
  plan.head = c.tie_word_embeddings ? plan.embed : "lm_head.weight";
  for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
    LayerPlan l = PreNormLayer(layer);
    fill(layer, l);
    plan.layers.push_back(std::move(l));
  }
  return plan;
}

FfnPlan GroupRoutedMoe(const ModelConfig& c, const std::string& prefix) {
  FfnPlan ffn{.kind = FfnKind::kMoe,
              .prefix = prefix,
              .router = RouterKind::kSigmoidGroupTopK,
              .router_weight = prefix + ".gate.weight",
              .selection_bias = prefix + ".gate.e_score_correction_bias"};
  if (c.num_shared_experts > 0) {
    ffn.shared_prefix = prefix + ".shared_experts";
    ffn.shared_intermediate = uint64_t{c.moe_intermediate_size} * c.num_shared_experts;
  }
  return ffn;
}

FfnPlan SoftmaxMoe(const std::string& prefix) {
  return FfnPlan{.kind = FfnKind::kMoe,
                 .prefix = prefix,
                 .router = RouterKind::kSoftmaxTopK,
                 .router_weight = prefix + ".gate.weight"};
}

std::vector<TensorSpec> SwiGluFamily::ExpertMatrices(const ModelConfig& c,
                                                     TensorFormat format) const {
  const uint64_t hidden = c.hidden_size;
  const uint64_t inter = c.moe_intermediate_size;
  return SwiGluRecord(inter, hidden, format);
}

CheckpointSlice SwiGluFamily::ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                                          std::string_view matrix) const {
  return {.tensor = absl::StrCat(LayerPrefix(layer), "mlp.experts.", expert, ".",
                                 std::string(matrix), ".weight")};
}

}  // namespace warp::computed::family_parts
