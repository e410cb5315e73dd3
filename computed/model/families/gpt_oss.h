#pragma once

// gpt-oss (`gpt_oss`, gpt-oss-20b / 120b): GQA with q/k/v/o biases, a learned
// sink logit per head, NeoX rope with YaRN (honouring `truncate`), layers
// alternating sliding-window and full attention by `layer_types`; router
// with bias, top-k of the raw logits then softmax over the k; experts with
// interleaved gate_up rows, clamped SwiGLU and biases, shipped as MXFP4.
// Specification: transformers models/gpt_oss/modeling_gpt_oss.py (see
// tests/reference/README.md#gpt-oss for the math as the reference implements it).

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& GptOssFamily();

}  // namespace warp::computed
