#include "computed/model/families/mixtral.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

class Mixtral : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kMixtral; }
  std::string_view name() const override { return "mixtral"; }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_ASSIGN_OR_RETURN(out.num_experts, Uint(json, "num_local_experts"));
    // Mixtral's experts are its MLPs.
    WARP_ASSIGN_OR_RETURN(out.moe_intermediate_size, Uint(json, "intermediate_size"));
    out.norm_topk_prob = true;  // MixtralSparseMoeBlock always renormalizes the top-k
    WARP_RETURN_IF_ERROR(ParseHeadDim(json, out));
    out.moe_layer.assign(out.num_layers, true);
    return absl::OkStatus();
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    return PreNormModel(c, [&](uint32_t layer, LayerPlan& l) {
      l.mixer = GqaMixer(c, layer);
      l.ffn = SoftmaxMoe(LayerPrefix(layer) + "block_sparse_moe");
    });
  }

  // w1/w3/w2 are the record's gate_proj/up_proj/down_proj.
  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    return {.tensor = absl::StrCat(LayerPrefix(layer), "block_sparse_moe.experts.", expert, ".",
                                   NumberedMatrix(matrix), ".weight")};
  }
};

}  // namespace

const ModelFamily& MixtralFamily() {
  static const Mixtral family;
  return family;
}

}  // namespace warp::computed
