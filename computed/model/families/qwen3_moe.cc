#include "computed/model/families/qwen3_moe.h"

#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

class Qwen3Moe : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kQwen3Moe; }
  std::string_view name() const override { return "qwen3_moe"; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, Uint(json, "moe_intermediate_size"));
    WARP_ASSIGN_OR_RETURN(out.num_experts, Uint(json, "num_experts"));
    WARP_ASSIGN_OR_RETURN(out.norm_topk_prob, BoolOr(json, "norm_topk_prob", false));
    out.qk_norm = true;
    WARP_RETURN_IF_ERROR(ParseHeadDim(json, out));
    WARP_ASSIGN_OR_RETURN(uint32_t step, UintOr(json, "decoder_sparse_step", 1));
    if (step == 0) return KeyError("decoder_sparse_step", "must be positive");
    out.moe_layer.assign(out.num_layers, false);
    for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
      // As Qwen3MoeDecoderLayer: sparse when (layer + 1) % step == 0 and not in mlp_only_layers.
      out.moe_layer[layer] = (layer + 1) % step == 0;
    }
    if (auto it = json.find("mlp_only_layers"); it != json.end() && !it->is_null()) {
      if (!it->is_array()) return KeyError("mlp_only_layers", "must be an array");
      for (const Json& layer : *it) {
        if (!layer.is_number_integer() || layer.get<int64_t>() < 0 ||
            layer.get<uint64_t>() >= out.num_layers) {
          return KeyError("mlp_only_layers", "must hold layer indices below num_hidden_layers");
        }
        out.moe_layer[layer.get<uint32_t>()] = false;
      }
    }
    return absl::OkStatus();
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    return PreNormModel(c, [&](uint32_t layer, LayerPlan& l) {
      const std::string p = LayerPrefix(layer);
      l.mixer = GqaMixer(c, layer);
      l.ffn = c.IsMoeLayer(layer) ? SoftmaxMoe(p + "mlp") : DenseMlp(p + "mlp", c.intermediate_size);
    });
  }
};

}  // namespace

const ModelFamily& Qwen3MoeFamily() {
  static const Qwen3Moe family;
  return family;
}

}  // namespace warp::computed
