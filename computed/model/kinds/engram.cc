#include "computed/model/kinds/engram.h"

namespace warp::computed {

EngramTensors EngramTensors::Of(const ModelConfig& c, const EngramPlan& plan) {
  const std::string& p = plan.prefix;
  const uint64_t hidden = c.hidden_size, streams = c.hyper.mult;
  const uint64_t row_floats = uint64_t{c.engram.RowsPerToken()} * c.engram.head_dim;
  return {.kv = {p + "wkv.weight", {(streams + 1) * hidden, row_floats}},
          .q_weight = {p + "q_weight", {streams, hidden}, /*f32=*/true},
          .k_weight = {p + "k_weight", {streams, hidden}, /*f32=*/true}};
}

void EngramTensors::ForEach(TensorVisitor visit) const {
  visit(kv, TrunkKind::kAttention);
  visit(q_weight, TrunkKind::kOther);
  visit(k_weight, TrunkKind::kOther);
}

std::string EngramTableCodes(const EngramPlan& plan) { return plan.prefix + "embed.weight"; }
std::string EngramTableScales(const EngramPlan& plan) { return plan.prefix + "embed.scale"; }

}  // namespace warp::computed
