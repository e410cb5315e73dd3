#include "computed/model/kinds/gated_mlp.h"

namespace warp::computed {

MlpTensors MlpTensors::Of(const std::string& prefix, const MlpNames& names, uint64_t hidden,
                          uint64_t intermediate) {
  return {.gate = {prefix + "." + names.gate + ".weight", {intermediate, hidden}},
          .up = {prefix + "." + names.up + ".weight", {intermediate, hidden}},
          .down = {prefix + "." + names.down + ".weight", {hidden, intermediate}}};
}

void MlpTensors::ForEach(TrunkKind kind, TensorVisitor visit) const {
  for (const TensorRef* t : {&gate, &up, &down}) visit(*t, kind);
}

}  // namespace warp::computed
