#include "common/compute/math_fingerprint.h"

#include <bit>
#include <cmath>
#include <string_view>
#include <vector>

#include "common/compute/glu.h"
#include "common/hash.h"

namespace warp {
namespace {

// 4,097 gates and ups spread over [-24, 24], where exp and tanh round
// differently from one libm to another if they do at all.
std::vector<float> Inputs(float scale) {
  std::vector<float> values;
  for (int i = -2048; i <= 2048; ++i) values.push_back(scale * static_cast<float>(i) / 2048.0f);
  return values;
}

uint64_t Hash(const std::vector<float>& values, uint64_t hash) {
  for (float v : values) {
    const uint32_t bits = std::bit_cast<uint32_t>(v);
    hash = Fnv1a64(std::string_view(reinterpret_cast<const char*>(&bits), sizeof(bits)), hash);
  }
  return hash;
}

}  // namespace

uint64_t MathFingerprint() {
  const std::vector<float> up = Inputs(7.0f);
  uint64_t hash = kFnv1a64Basis;
  for (const GluActivation act : {GluActivation{},                         // SiLU
                                  GluActivation{.limit = 10.0f},           // DeepSeek V4
                                  GluActivation{.situ = true, .beta = 2.5f, .linear_beta = 4.0f}}) {
    std::vector<float> gate = Inputs(24.0f);
    GluMul(act, gate, up);
    hash = Hash(gate, hash);
  }
  std::vector<float> gate = Inputs(24.0f);
  for (float& g : gate) g = GptOssGlu(g);
  return Hash(gate, hash);
}

}  // namespace warp
