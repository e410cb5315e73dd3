#include "common/compute/glu.h"

#include <algorithm>
#include <cmath>

namespace warp {

void SiluMul(std::span<float> gate, std::span<const float> up) {
  for (size_t i = 0; i < gate.size(); ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void GluMul(const GluActivation& act, std::span<float> gate, std::span<const float> up) {
  if (act.limit > 0) {  // DeepSeek V4: clamp, then SwiGLU
    for (size_t i = 0; i < gate.size(); ++i) {
      const float g = std::min(gate[i], act.limit);
      gate[i] = g / (1.0f + std::exp(-g)) * std::clamp(up[i], -act.limit, act.limit);
    }
    return;
  }
  if (!act.situ) return SiluMul(gate, up);
  for (size_t i = 0; i < gate.size(); ++i) {
    const float g = gate[i];
    const float u =
        act.linear_beta > 0 ? act.linear_beta * std::tanh(up[i] / act.linear_beta) : up[i];
    gate[i] = act.beta * std::tanh(g / act.beta) / (1.0f + std::exp(-g)) * u;
  }
}

}  // namespace warp
