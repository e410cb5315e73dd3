#pragma once

// Qwen3-MoE (`qwen3_moe`): GQA with per-head q/k RMSNorm, softmax top-k
// routing (optionally renormalised), decoder_sparse_step / mlp_only_layers
// dense layers. Specification: transformers models/qwen3_moe/modeling_qwen3_moe.py.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& Qwen3MoeFamily();

}  // namespace warp::computed
