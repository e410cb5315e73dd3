#include "computed/engine/ffns/dense_mlp.h"

#include <vector>

#include "common/compute/glu.h"
#include "common/compute/linear.h"
#include "computed/engine/ops.h"
#include "computed/engine/stage_timer.h"

namespace warp::computed {

DenseMlp::DenseMlp(const TrunkWeights& weights, const MlpTensors& tensors, const GluActivation& act,
                   ComputeContext& compute, double& seconds)
    : compute_(compute),
      seconds_(seconds),
      act_(act),
      gate_(weights.Matrix(tensors.gate)),
      up_(weights.Matrix(tensors.up)),
      down_(weights.Matrix(tensors.down)) {}

absl::Status DenseMlp::Forward(std::span<const float> x, const PassTokens& tokens,
                               std::span<float> out) {
  Run(x, tokens.size(), out);
  return absl::OkStatus();
}

void DenseMlp::Run(std::span<const float> x, uint32_t n, std::span<float> out) {
  StageTimer timer(seconds_);
  std::vector<float> gate(n * gate_.rows), up(n * up_.rows);
  Linear(compute_, gate_, x.data(), n, gate.data());
  Linear(compute_, up_, x.data(), n, up.data());
  GluMul(act_, gate, up);
  Linear(compute_, down_, gate.data(), n, out.data());
}

}  // namespace warp::computed
