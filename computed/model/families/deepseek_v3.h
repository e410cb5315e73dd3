#pragma once

// DeepSeek V3 / Kimi K2 (`deepseek_v3`, `kimi_k2`): MLA with the absorbed
// latent cache, interleaved rope with YaRN, sigmoid group-limited routing
// with a selection bias, shared experts, first_k_dense_replace dense layers.
// Specification: transformers models/deepseek_v3/modeling_deepseek_v3.py.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& DeepseekV3Family();

}  // namespace warp::computed
