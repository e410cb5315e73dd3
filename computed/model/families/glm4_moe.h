#pragma once

// GLM-4.5 (`glm4_moe`): GQA with q/k/v biases, optional q/k norm and partial
// rope; DeepSeek-style sigmoid group routing with shared experts.
// Specification: transformers models/glm4_moe/modeling_glm4_moe.py.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& Glm4MoeFamily();

}  // namespace warp::computed
