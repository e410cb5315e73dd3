#pragma once

// Sampler: picks the next token from logits. Greedy (temperature 0), or
// seeded sampling with temperature, top-k and top-p (nucleus), applied in
// that order as llama.cpp and transformers do. The same seed and logits give
// the same tokens on every run.
//
// Thread-compatible: owns its random state.

#include <cstdint>
#include <random>
#include <span>

namespace warp::computed {

struct SamplerOptions {
  float temperature = 0.0f;  // 0: greedy
  uint32_t top_k = 0;        // 0: all tokens
  float top_p = 1.0f;        // 1: no nucleus cut
  uint64_t seed = 0;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}

  int32_t Sample(std::span<const float> logits);

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;
};

// Index of the largest logit; ties go to the lower index.
int32_t ArgmaxToken(std::span<const float> logits);

}  // namespace warp::computed
