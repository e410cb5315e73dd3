#pragma once

// A gated MLP's tensors, down(act(gate x) * up x): the dense layers' FFN and
// the shared experts of MoE layers. The math is engine/ffns/dense_mlp.h.
//
// Thread-compatible value types.

#include <cstdint>
#include <string>

#include "computed/model/kinds/expert_record.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

// The matrix names of a gated MLP under its prefix (PREFIX.NAME.weight):
// Hugging Face's, as in an expert's record, unless the release renames them
// (DeepSeek V4: w1, w3, w2).
struct MlpNames {
  std::string gate{RecordMatrix::kGate}, up{RecordMatrix::kUp}, down{RecordMatrix::kDown};
};

struct MlpTensors {
  TensorRef gate, up, down;  // [intermediate, hidden] twice, [hidden, intermediate]

  static MlpTensors Of(const std::string& prefix, const MlpNames& names, uint64_t hidden,
                       uint64_t intermediate);
  void ForEach(TrunkKind kind, TensorVisitor visit) const;
};

}  // namespace warp::computed
