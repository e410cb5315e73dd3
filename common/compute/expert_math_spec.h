#pragma once

// What a family's routed experts compute besides their records' weights: the
// activation and its constants. The family chooses it (FfnPlan); a client
// sends it with a compute request, and ExpertMath runs it.
//
// Thread-safe: plain values.

#include "common/compute/glu.h"

namespace warp {

enum class ExpertActivation {
  kSwiGlu,         // records gate_proj, up_proj, down_proj: down(act(gate) * up), act
                   // per ExpertMathSpec::glu (SiLU or SiTU)
  kClampedSwiGlu,  // gpt-oss: records gate_up (rows interleaved), down, with biases;
                   // gate <= limit, |up| <= limit, down((up + 1) * gate * sigmoid(1.702 gate))
};

struct ExpertMathSpec {
  ExpertActivation activation = ExpertActivation::kSwiGlu;
  GluActivation glu;          // kSwiGlu
  float swiglu_limit = 0.0f;  // kClampedSwiGlu
};

}  // namespace warp
