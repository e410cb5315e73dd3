#include "computed/model/families/glm5_next.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

constexpr const char* kRoot = "model.language_model.";

std::string Layer(uint32_t layer) { return absl::StrCat(kRoot, "layers.", layer, "."); }

// A per-layer list of names: each entry one of `a` (true) or `b` (false).
absl::Status ParseKinds(const Json& json, const char* key, uint32_t layers, const char* a,
                        const char* b, std::vector<bool>& out) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_array() || it->size() != layers) {
    return KeyError(key, absl::StrCat("must list the ", layers, " layers"));
  }
  out.assign(layers, false);
  for (uint32_t layer = 0; layer < layers; ++layer) {
    const Json& entry = (*it)[layer];
    if (entry != a && entry != b) {
      return KeyError(absl::StrCat(key, "[", layer, "]"),
                      absl::StrCat(entry.dump(), " is not \"", a, "\" or \"", b, "\""));
    }
    out[layer] = entry == a;
  }
  return absl::OkStatus();
}

// KDA's shape: linear_attn_config {head_dim, num_heads, short_conv_kernel_size,
// gate_lower_bound or lower_bound}, or the flat linear_* keys.
absl::Status ParseLinear(const Json& json, LinearAttention& kda) {
  auto lac = json.find("linear_attn_config");
  if (lac != json.end() && lac->is_object()) {
    WARP_ASSIGN_OR_RETURN(kda.head_dim, Uint(*lac, "head_dim"));
    WARP_ASSIGN_OR_RETURN(kda.num_heads, Uint(*lac, "num_heads"));
    WARP_ASSIGN_OR_RETURN(kda.conv_kernel, UintOr(*lac, "short_conv_kernel_size", 4));
    WARP_ASSIGN_OR_RETURN(double bound,
                          DoubleOr(*lac, "gate_lower_bound", lac->value("lower_bound", -5.0)));
    kda.gate_lower_bound = static_cast<float>(bound);
  } else {
    WARP_ASSIGN_OR_RETURN(kda.head_dim, UintOr(json, "linear_head_dim", 128));
    WARP_ASSIGN_OR_RETURN(kda.num_heads, UintOr(json, "linear_num_heads", 64));
    WARP_ASSIGN_OR_RETURN(kda.conv_kernel, UintOr(json, "linear_conv_kernel_dim", 4));
    WARP_ASSIGN_OR_RETURN(double bound, DoubleOr(json, "linear_lower_bound", -5.0));
    kda.gate_lower_bound = static_cast<float>(bound);
  }
  if (kda.head_dim == 0 || kda.num_heads == 0 || kda.conv_kernel == 0) {
    return KeyError("linear_attn_config",
                    "head_dim, num_heads and the conv kernel must be positive");
  }
  if (kda.gate_lower_bound > 0)
    return KeyError("linear_attn_config.gate_lower_bound", "must be negative");
  return absl::OkStatus();
}

absl::Status ParseIndexer(const Json& json, ModelConfig& out) {
  DsaIndexer& d = out.dsa;
  WARP_ASSIGN_OR_RETURN(d.index_heads, UintOr(json, "index_n_heads", 32));
  WARP_ASSIGN_OR_RETURN(d.index_head_dim, UintOr(json, "index_head_dim", 128));
  WARP_ASSIGN_OR_RETURN(d.index_topk, UintOr(json, "index_topk", 2048));
  WARP_ASSIGN_OR_RETURN(d.kpool, UintOr(json, "index_kpool", 16));
  WARP_ASSIGN_OR_RETURN(d.select_tail, BoolOr(json, "index_kpool_always_select_tail", true));
  if (d.kpool == 0 || d.index_topk % d.kpool != 0) {
    return KeyError("index_topk", "must be a positive multiple of index_kpool");
  }
  if (auto it = json.find("indexer_types"); it != json.end() && it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      if ((*it)[i] != "full") {
        return KeyError(absl::StrCat("indexer_types[", i, "]"),
                        absl::StrCat((*it)[i].dump(), " is not supported (only \"full\")"));
      }
    }
  }
  return absl::OkStatus();
}

class Glm5Next : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kGlm5Next; }
  std::string_view name() const override { return "glm5_next"; }

  // The text model's keys, in text_config or (text-only releases) at the top.
  absl::StatusOr<const Json*> TextConfig(const Json& config) const override {
    auto it = config.find("text_config");
    return it != config.end() && it->is_object() ? &*it : &config;
  }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_RETURN_IF_ERROR(ParseGroupRouting(json, out));
    if (json.contains("mlp_layer_types")) {
      WARP_RETURN_IF_ERROR(
          ParseKinds(json, "mlp_layer_types", out.num_layers, "sparse", "dense", out.moe_layer));
    }
    WARP_RETURN_IF_ERROR(ParseMla(json, out));
    WARP_RETURN_IF_ERROR(ParseLinear(json, out.linear_attention));
    WARP_RETURN_IF_ERROR(ParseKinds(json, "layer_types", out.num_layers, "linear_attention",
                                    "deepseek_sparse_attention", out.kda_layer));
    WARP_RETURN_IF_ERROR(ParseIndexer(json, out));
    WARP_ASSIGN_OR_RETURN(double limit, DoubleOr(json, "swiglu_limit", 0.0));
    out.glu.limit = static_cast<float>(limit);
    return ParseHyperConnections(json, out.hyper);
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    ModelPlan plan{.residual = ResidualKind::kHyperConnections,
                   .embed = absl::StrCat(kRoot, "embed_tokens.weight"),
                   .final_norm = absl::StrCat(kRoot, "norm.weight"),
                   .head = c.tie_word_embeddings ? absl::StrCat(kRoot, "embed_tokens.weight")
                                                 : "lm_head.weight"};
    for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
      const std::string p = Layer(layer);
      LayerPlan l{.input_norm = p + "input_layernorm.weight",
                  .post_norm = p + "post_attention_layernorm.weight"};
      if (c.IsKdaLayer(layer)) {
        l.mixer = MixerPlan{.prefix = p + "self_attn.",
                            .params = KdaParams{.a_log_shape = {c.linear_attention.num_heads}}};
      } else {
        l.mixer = MixerPlan{
            .prefix = p + "self_attn.",
            .softmax_scale =
                1.0f / std::sqrt(static_cast<float>(c.qk_nope_head_dim + c.qk_rope_head_dim)),
            .params = MlaParams{.latent_norm_eps = c.rms_norm_eps, .dsa_indexer = true}};
        l.mixer.rope = {.dim = c.qk_rope_head_dim, .interleaved = true, .theta = c.rope_theta};
      }
      l.ffn = c.IsMoeLayer(layer) ? GroupRoutedMoe(c, p + "mlp")
                                  : DenseMlp(p + "mlp", c.intermediate_size);
      l.ffn.glu = c.glu;
      HyperSites(p, l);
      plan.layers.push_back(std::move(l));
    }
    return plan;  // hc_head stays empty: the head is the streams' mean
  }

  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    return {.tensor = absl::StrCat(Layer(layer), "mlp.experts.", expert, ".", std::string(matrix),
                                   ".weight")};
  }
};

}  // namespace

const ModelFamily& Glm5NextFamily() {
  static const Glm5Next family;
  return family;
}

}  // namespace warp::computed
