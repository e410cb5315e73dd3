#include "computed/model/families/deepseek_v3.h"

#include <cmath>

#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

// YaRN's softmax-scale multiplier for MLA: mscale(factor, mscale_all_dim)^2
// when YaRN is on and mscale_all_dim is set, else 1 (DeepseekV3Attention).
float MlaSoftmaxScaleFactor(const ModelConfig& c) {
  if (!c.yarn.enabled || c.yarn.mscale_all_dim == 0) return 1.0f;
  const double mscale = YarnMscale(c.yarn.factor, c.yarn.mscale_all_dim);
  return static_cast<float>(mscale * mscale);
}

class DeepseekV3 : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kDeepseekV3; }
  std::string_view name() const override { return "deepseek_v3"; }
  std::vector<std::string_view> model_types() const override { return {"deepseek_v3", "kimi_k2"}; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_RETURN_IF_ERROR(ParseGroupRouting(json, out));
    return ParseMla(json, out);
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    return PreNormModel(c, [&](uint32_t layer, LayerPlan& l) {
      const std::string p = LayerPrefix(layer);
      l.mixer = MixerPlan{
          .prefix = p + "self_attn.",
          .rope = {.dim = c.qk_rope_head_dim, .interleaved = true, .theta = c.rope_theta,
                   .yarn = c.yarn},
          .softmax_scale = MlaSoftmaxScaleFactor(c) /
                           std::sqrt(static_cast<float>(c.qk_nope_head_dim + c.qk_rope_head_dim)),
          .params = MlaParams{}};
      l.ffn = c.IsMoeLayer(layer) ? GroupRoutedMoe(c, p + "mlp")
                                  : DenseMlp(p + "mlp", c.intermediate_size);
    });
  }
};

}  // namespace

const ModelFamily& DeepseekV3Family() {
  static const DeepseekV3 family;
  return family;
}

}  // namespace warp::computed
