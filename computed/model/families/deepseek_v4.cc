#include "computed/model/families/deepseek_v4.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

std::string Layer(uint32_t layer) { return absl::StrCat("layers.", layer, "."); }

// compress_rates {"compressed_sparse_attention": m, "heavily_compressed_attention": m'}
// (or the older compress_rate_csa / compress_rate_hca).
absl::Status ParseRates(const Json& json, CompressedAttention& ca) {
  WARP_ASSIGN_OR_RETURN(ca.csa_rate, UintOr(json, "compress_rate_csa", 4));
  WARP_ASSIGN_OR_RETURN(ca.hca_rate, UintOr(json, "compress_rate_hca", 128));
  if (auto it = json.find("compress_rates"); it != json.end() && it->is_object()) {
    WARP_ASSIGN_OR_RETURN(ca.csa_rate, UintOr(*it, "compressed_sparse_attention", ca.csa_rate));
    WARP_ASSIGN_OR_RETURN(ca.hca_rate, UintOr(*it, "heavily_compressed_attention", ca.hca_rate));
  }
  if (ca.csa_rate == 0 || ca.hca_rate == 0) return KeyError("compress_rates", "must be positive");
  return absl::OkStatus();
}

// layer_types (names, rates from compress_rates), else compress_ratios per
// layer: 0 sliding, csa_rate CSA, any other HCA at that rate (as ds4 reads
// the release; transformers knows only 4 and 128).
absl::Status ParseLayerKinds(const Json& json, ModelConfig& out) {
  CompressedAttention& ca = out.compressed;
  ca.layer_kind.assign(out.num_layers, CompressionKind::kNone);
  ca.layer_rate.assign(out.num_layers, 0);
  auto types = json.find("layer_types");
  auto ratios = json.find("compress_ratios");
  const bool by_type = types != json.end() && types->is_array();
  const Json* list = by_type ? &*types : ratios != json.end() ? &*ratios : nullptr;
  const char* key = by_type ? "layer_types" : "compress_ratios";
  if (list == nullptr) return KeyError("compress_ratios", "missing (and no layer_types)");
  // The release lists one more ratio than layers: its MTP layer's.
  if (!list->is_array() || list->size() < out.num_layers ||
      (by_type && list->size() != out.num_layers)) {
    return KeyError(key, absl::StrCat("must list every one of the ", out.num_layers,
                                      " layers (has ", list->is_array() ? list->size() : 0, ")"));
  }
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    const Json& entry = (*list)[layer];
    const std::string where = absl::StrCat(key, "[", layer, "]");
    if (by_type) {
      if (entry == "compressed_sparse_attention") {
        ca.layer_kind[layer] = CompressionKind::kCsa;
        ca.layer_rate[layer] = ca.csa_rate;
      } else if (entry == "heavily_compressed_attention") {
        ca.layer_kind[layer] = CompressionKind::kHca;
        ca.layer_rate[layer] = ca.hca_rate;
      } else if (entry != "sliding_attention") {
        return KeyError(where, absl::StrCat(entry.dump(), " is not an attention type"));
      }
      continue;
    }
    if (!entry.is_number_integer() || entry.get<int64_t>() < 0 ||
        entry.get<int64_t>() > (1 << 20)) {
      return KeyError(where, absl::StrCat(entry.dump(), " is not a compression ratio"));
    }
    const uint32_t ratio = entry.get<uint32_t>();
    if (ratio == 0) continue;
    ca.layer_kind[layer] = ratio == ca.csa_rate ? CompressionKind::kCsa : CompressionKind::kHca;
    ca.layer_rate[layer] = ratio;
  }
  return absl::OkStatus();
}

// mlp_layer_types ("hash_moe" / "moe"), else the first num_hash_layers.
absl::Status ParseHashLayers(const Json& json, ModelConfig& out) {
  out.hash_layer.assign(out.num_layers, false);
  if (auto it = json.find("mlp_layer_types"); it != json.end() && it->is_array()) {
    if (it->size() != out.num_layers) {
      return KeyError("mlp_layer_types", absl::StrCat("must list the ", out.num_layers, " layers"));
    }
    for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
      const Json& entry = (*it)[layer];
      if (entry != "hash_moe" && entry != "moe") {
        return KeyError(absl::StrCat("mlp_layer_types[", layer, "]"),
                        absl::StrCat(entry.dump(), " is not \"hash_moe\" or \"moe\""));
      }
      out.hash_layer[layer] = entry == "hash_moe";
    }
    return absl::OkStatus();
  }
  WARP_ASSIGN_OR_RETURN(uint32_t hashed, UintOr(json, "num_hash_layers", 3));
  for (uint32_t layer = 0; layer < std::min(hashed, out.num_layers); ++layer)
    out.hash_layer[layer] = true;
  return absl::OkStatus();
}

class DeepseekV4 : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kDeepseekV4; }
  std::string_view name() const override { return "deepseek_v4"; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_RETURN_IF_ERROR(deepseek_v4::ParseCommon(json, out));
    CompressedAttention& ca = out.compressed;
    WARP_RETURN_IF_ERROR(ParseRates(json, ca));
    WARP_RETURN_IF_ERROR(ParseLayerKinds(json, out));
    return ParseHashLayers(json, out);
  }

  bool ReleaseBlockQuantizes(std::string_view name) const override {
    return deepseek_v4::ReleaseBlockQuantizes(name);
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    ModelPlan plan{
        .residual = ResidualKind::kHyperConnections,
        .embed = "embed.weight",
        .final_norm = "norm.weight",
        .head = c.tie_word_embeddings ? "embed.weight" : "head.weight",
        .hc_head = {.fn = "hc_head_fn", .base = "hc_head_base", .scale = "hc_head_scale"}};
    for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
      const std::string p = Layer(layer);
      const CompressionKind kind = c.compressed.layer_kind[layer];
      LayerPlan l = deepseek_v4::Layer(c, p);
      l.mixer = MixerPlan{.prefix = p + "attn.",
                          .rope = deepseek_v4::Rope(c, kind != CompressionKind::kNone),
                          .params = CompressedMqaParams{
                              .sliding_window = c.sliding_window,
                              .compression = kind,
                              .compress_rate = c.compressed.layer_rate[layer]}};
      if (c.hash_layer[layer]) {
        l.ffn.hash_table = p + "ffn.gate.tid2eid";
        l.ffn.selection_bias.clear();
      }
      plan.layers.push_back(std::move(l));
    }
    return plan;
  }

  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    return deepseek_v4::ExpertSlice(layer, expert, matrix);
  }
};

}  // namespace

namespace deepseek_v4 {

absl::Status ParseCommon(const Json& json, ModelConfig& out) {
  if (auto it = json.find("scoring_func"); it != json.end() && *it != "sqrtsoftplus") {
    return KeyError("scoring_func", absl::StrCat(it->dump(), " is not supported (sqrtsoftplus)"));
  }
  out.router = RouterKind::kSqrtSoftplusTopK;
  WARP_ASSIGN_OR_RETURN(out.num_experts, Uint(json, "n_routed_experts"));
  WARP_ASSIGN_OR_RETURN(out.num_shared_experts, UintOr(json, "n_shared_experts", 1));
  WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, Uint(json, "moe_intermediate_size"));
  WARP_ASSIGN_OR_RETURN(out.norm_topk_prob, BoolOr(json, "norm_topk_prob", true));
  WARP_ASSIGN_OR_RETURN(double scaling, DoubleOr(json, "routed_scaling_factor", 1.0));
  out.routed_scaling_factor = static_cast<float>(scaling);
  out.moe_layer.assign(out.num_layers, true);
  WARP_RETURN_IF_ERROR(ParseHeadDim(json, out));
  WARP_ASSIGN_OR_RETURN(out.q_lora_rank, Uint(json, "q_lora_rank"));
  WARP_ASSIGN_OR_RETURN(out.qk_rope_head_dim, UintOr(json, "qk_rope_head_dim", 0));
  if (out.qk_rope_head_dim == 0) {
    WARP_ASSIGN_OR_RETURN(double factor, DoubleOr(json, "partial_rotary_factor", 0.125));
    out.qk_rope_head_dim = static_cast<uint32_t>(out.head_dim * factor);
  }
  if (out.qk_rope_head_dim % 2 != 0 || out.qk_rope_head_dim > out.head_dim) {
    return KeyError("qk_rope_head_dim", "must be even and at most head_dim");
  }
  WARP_ASSIGN_OR_RETURN(out.sliding_window, Uint(json, "sliding_window"));
  WARP_ASSIGN_OR_RETURN(double limit, DoubleOr(json, "swiglu_limit", 0.0));
  out.glu.limit = static_cast<float>(limit);
  CompressedAttention& ca = out.compressed;
  WARP_ASSIGN_OR_RETURN(ca.compress_rope_theta, DoubleOr(json, "compress_rope_theta", 160000.0));
  WARP_ASSIGN_OR_RETURN(ca.o_groups, Uint(json, "o_groups"));
  WARP_ASSIGN_OR_RETURN(ca.o_lora_rank, Uint(json, "o_lora_rank"));
  if (ca.o_groups == 0 || out.num_heads % ca.o_groups != 0) {
    return KeyError("o_groups", "must divide num_attention_heads");
  }
  WARP_ASSIGN_OR_RETURN(ca.index_heads, Uint(json, "index_n_heads"));
  WARP_ASSIGN_OR_RETURN(ca.index_head_dim, Uint(json, "index_head_dim"));
  WARP_ASSIGN_OR_RETURN(ca.index_topk, Uint(json, "index_topk"));
  if (out.qk_rope_head_dim > ca.index_head_dim) {
    return KeyError("index_head_dim", "must hold the rope dims (qk_rope_head_dim)");
  }
  return ParseHyperConnections(json, out.hyper);
}

RopePlan Rope(const ModelConfig& c, bool compressed) {
  if (!compressed) return {.dim = c.qk_rope_head_dim, .interleaved = true, .theta = c.rope_theta};
  YarnScaling yarn = c.yarn;
  if (yarn.enabled && yarn.attention_factor == 0) yarn.attention_factor = 1.0;
  return {.dim = c.qk_rope_head_dim,
          .interleaved = true,
          .theta = c.compressed.compress_rope_theta,
          .yarn = yarn};
}

bool ReleaseBlockQuantizes(std::string_view name) {
  for (std::string_view suffix :
       {".attn.wq_a.weight", ".attn.wq_b.weight", ".attn.wkv.weight", ".attn.wo_a.weight",
        ".attn.wo_b.weight", ".indexer.wq_b.weight", ".shared_experts.w1.weight",
        ".shared_experts.w2.weight", ".shared_experts.w3.weight", ".engram.wkv.weight"}) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

CheckpointSlice ExpertSlice(uint32_t layer, uint32_t expert, std::string_view matrix) {
  const std::string base = absl::StrCat("layers.", layer, ".ffn.experts.", expert, ".",
                                       NumberedMatrix(matrix), ".");
  return {
      .tensor = base + "weight", .mxfp4_blocks = base + "weight", .mxfp4_scales = base + "scale"};
}

LayerPlan Layer(const ModelConfig& c, const std::string& p) {
  LayerPlan l{.input_norm = p + "attn_norm.weight", .post_norm = p + "ffn_norm.weight"};
  l.ffn = FfnPlan{.kind = FfnKind::kMoe,
                  .prefix = p + "ffn",
                  .glu = c.glu,
                  .mlp = {.gate = "w1", .up = "w3", .down = "w2"},
                  .router = RouterKind::kSqrtSoftplusTopK,
                  .router_weight = p + "ffn.gate.weight",
                  .selection_bias = p + "ffn.gate.bias"};
  if (c.num_shared_experts > 0) {
    l.ffn.shared_prefix = p + "ffn.shared_experts";
    l.ffn.shared_intermediate = uint64_t{c.moe_intermediate_size} * c.num_shared_experts;
  }
  HyperSites(p, l);
  return l;
}

}  // namespace deepseek_v4

const ModelFamily& DeepseekV4Family() {
  static const DeepseekV4 family;
  return family;
}

}  // namespace warp::computed
