#include "computed/engine/ffns/dense_mlp.h"

#include <vector>

#include "computed/engine/linear.h"
#include "computed/engine/ops.h"
#include "computed/engine/stage_timer.h"

namespace warp::computed {

DenseMlp::DenseMlp(const TrunkWeights& weights, const std::string& prefix,
                   const GluActivation& act, ThreadPool& pool, double& seconds)
    : pool_(pool),
      seconds_(seconds),
      act_(act),
      gate_(weights.Matrix(prefix + ".gate_proj.weight")),
      up_(weights.Matrix(prefix + ".up_proj.weight")),
      down_(weights.Matrix(prefix + ".down_proj.weight")) {}

absl::Status DenseMlp::Forward(std::span<const float> x, uint32_t n, uint32_t,
                               std::span<float> out) {
  StageTimer timer(seconds_);
  std::vector<float> gate(n * gate_.rows), up(n * up_.rows);
  Linear(pool_, gate_, x.data(), n, gate.data());
  Linear(pool_, up_, x.data(), n, up.data());
  GluMul(act_, gate, up);
  Linear(pool_, down_, gate.data(), n, out.data());
  return absl::OkStatus();
}

}  // namespace warp::computed
