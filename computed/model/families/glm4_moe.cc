#include "computed/model/families/glm4_moe.h"

#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

class Glm4Moe : public SwiGluFamily {
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
    return PreNormModel(c, [&](uint32_t layer, LayerPlan& l) {
      const std::string p = LayerPrefix(layer);
      l.mixer = GqaMixer(c, layer);
      l.ffn = c.IsMoeLayer(layer) ? GroupRoutedMoe(c, p + "mlp")
                                  : DenseMlp(p + "mlp", c.intermediate_size);
    });
  }
};

}  // namespace

const ModelFamily& Glm4MoeFamily() {
  static const Glm4Moe family;
  return family;
}

}  // namespace warp::computed
