#include "computed/model/families/glm4_moe.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

class Glm4Moe : public ModelFamily {
 public:
  Architecture arch() const override { return Architecture::kGlm4Moe; }
  std::string_view name() const override { return "glm4_moe"; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_RETURN_IF_ERROR(ParseGroupRouting(json, out));
    WARP_RETURN_IF_ERROR(ParseHeadDim(json, out));
    WARP_ASSIGN_OR_RETURN(out.attention_bias, BoolOr(json, "attention_bias", false));
    WARP_ASSIGN_OR_RETURN(out.qk_norm, BoolOr(json, "use_qk_norm", false));
    WARP_ASSIGN_OR_RETURN(double factor, DoubleOr(json, "partial_rotary_factor", 0.5));
    out.partial_rotary_factor = static_cast<float>(factor);
    return absl::OkStatus();
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    ModelPlan plan = PreNormModel(c);
    for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
      LayerPlan l = PreNormLayer(layer);
      const std::string p = LayerPrefix(layer);
      l.mixer = GqaMixer(c, layer);
      if (c.IsMoeLayer(layer)) {
        l.ffn = FfnPlan{.kind = FfnKind::kMoe,
                        .prefix = p + "mlp",
                        .router = RouterKind::kSigmoidGroupTopK,
                        .router_weight = p + "mlp.gate.weight",
                        .selection_bias = p + "mlp.gate.e_score_correction_bias"};
        if (c.num_shared_experts > 0) {
          l.ffn.shared_prefix = p + "mlp.shared_experts";
          l.ffn.shared_intermediate = uint64_t{c.moe_intermediate_size} * c.num_shared_experts;
        }
      } else {
        l.ffn = DenseMlp(p + "mlp", c.intermediate_size);
      }
      plan.layers.push_back(std::move(l));
    }
    return plan;
  }

  std::vector<TensorSpec> ExpertMatrices(const ModelConfig& c, TensorFormat f) const override {
    return SwiGluExpertMatrices(c, f);
  }

  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    return {.tensor = absl::StrCat(LayerPrefix(layer), "mlp.experts.", expert, ".",
                                   std::string(matrix), ".weight")};
  }
};

}  // namespace

const ModelFamily& Glm4MoeFamily() {
  static const Glm4Moe family;
  return family;
}

}  // namespace warp::computed
