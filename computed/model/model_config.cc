#include "computed/model/model_config.h"

#include <cmath>

namespace warp::computed {

double YarnMscale(double scale, double mscale) {
  return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

uint32_t ModelConfig::NumMoeLayers() const {
  uint32_t n = 0;
  for (bool moe : moe_layer) n += moe;
  return n;
}

}  // namespace warp::computed
