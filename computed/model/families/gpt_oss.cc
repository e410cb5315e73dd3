#include "computed/model/families/gpt_oss.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

// layer_types, or transformers' default (sliding first, then alternating).
absl::Status ParseLayerTypes(const Json& json, ModelConfig& out) {
  out.sliding_layer.assign(out.num_layers, false);
  auto it = json.find("layer_types");
  if (it == json.end() || it->is_null()) {
    for (uint32_t layer = 0; layer < out.num_layers; ++layer) out.sliding_layer[layer] = layer % 2 == 0;
    return absl::OkStatus();
  }
  if (!it->is_array() || it->size() != out.num_layers) {
    return KeyError("layer_types",
                    absl::StrCat("must be an array of num_hidden_layers (", out.num_layers,
                                 ") strings"));
  }
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    const Json& type = (*it)[layer];
    if (type == "sliding_attention") {
      out.sliding_layer[layer] = true;
    } else if (type != "full_attention") {
      return KeyError(absl::StrCat("layer_types[", layer, "]"),
                      absl::StrCat(type.dump(), " is not \"sliding_attention\" or \"full_attention\""));
    }
  }
  return absl::OkStatus();
}

class GptOss : public ModelFamily {
 public:
  Architecture arch() const override { return Architecture::kGptOss; }
  std::string_view name() const override { return "gpt_oss"; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_ASSIGN_OR_RETURN(out.num_experts, Uint(json, "num_local_experts"));
    // Every MLP is routed experts.
    WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, Uint(json, "intermediate_size"));
    out.moe_layer.assign(out.num_layers, true);
    out.router = RouterKind::kTopKSoftmax;
    WARP_RETURN_IF_ERROR(ParseHeadDim(json, out));
    WARP_ASSIGN_OR_RETURN(out.attention_bias, BoolOr(json, "attention_bias", true));
    WARP_ASSIGN_OR_RETURN(out.sliding_window, UintOr(json, "sliding_window", 0));
    WARP_RETURN_IF_ERROR(ParseLayerTypes(json, out));
    for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
      if (out.sliding_layer[layer] && out.sliding_window == 0) {
        return KeyError("sliding_window", "must be positive when layer_types has sliding layers");
      }
    }
    WARP_ASSIGN_OR_RETURN(double limit, DoubleOr(json, "swiglu_limit", 7.0));
    if (!(limit > 0)) return KeyError("swiglu_limit", "must be positive");
    out.swiglu_limit = static_cast<float>(limit);
    if (out.intermediate_size % 32 != 0 || out.hidden_size % 32 != 0) {
      return KeyError("intermediate_size/hidden_size", "must be multiples of 32 (MXFP4 blocks)");
    }
    return absl::OkStatus();
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    return PreNormModel(c, [&](uint32_t layer, LayerPlan& l) {
      const std::string p = LayerPrefix(layer);
      l.mixer = GqaMixer(c, layer);
      GqaParams& gqa = std::get<GqaParams>(l.mixer.params);
      gqa.o_bias = c.attention_bias;
      gqa.sinks = true;
      gqa.sliding_window = c.IsSlidingLayer(layer) ? c.sliding_window : 0;
      l.ffn = FfnPlan{.kind = FfnKind::kMoe,
                      .prefix = p + "mlp",
                      .router = RouterKind::kTopKSoftmax,
                      .router_weight = p + "mlp.router.weight",
                      .router_bias = p + "mlp.router.bias",
                      .activation = ExpertActivation::kClampedSwiGlu,
                      .swiglu_limit = c.swiglu_limit};
    });
  }

  // gate_up_proj keeps the release's interleaved rows (gate j = row 2j, up j = row 2j + 1).
  std::vector<TensorSpec> ExpertMatrices(const ModelConfig& c, TensorFormat f) const override {
    const uint64_t hidden = c.hidden_size;
    const uint64_t inter = c.moe_intermediate_size;
    return ClampedSwiGluRecord(inter, hidden, f);
  }

  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    const std::string base = absl::StrCat(LayerPrefix(layer), "mlp.experts.", std::string(matrix));
    CheckpointSlice slice{.tensor = base, .index = expert};
    // GGUF: per expert, gate and up rows interleaved by the importer.
    const bool bias = matrix.ends_with("_bias");
    const std::string_view stem = bias ? matrix.substr(0, matrix.size() - 5) : matrix;
    slice.expert_tensor = absl::StrCat(LayerPrefix(layer), "mlp.experts.", expert, ".",
                                       std::string(stem), bias ? ".bias" : ".weight");
    if (!bias) {
      slice.transposed = true;  // transformers computes hidden @ gate_up_proj[e]
      slice.mxfp4_blocks = base + "_blocks";
      slice.mxfp4_scales = base + "_scales";
    }
    return slice;
  }
};

}  // namespace

const ModelFamily& GptOssFamily() {
  static const GptOss family;
  return family;
}

}  // namespace warp::computed
