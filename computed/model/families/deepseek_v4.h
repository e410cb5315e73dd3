#pragma once

// DeepSeek V4 Flash / Pro (`deepseek_v4`): every layer is the compressed MQA
// of engine/mixers/compressed_mqa_attention (a sliding window, plus CSA with
// a lightning indexer or HCA per `compress_ratios` / `layer_types`), joined by
// manifold-constrained hyper-connections (hc_mult streams); MoE everywhere
// with sqrt-softplus routing, the first num_hash_layers routed by token id
// through tid2eid (read CERTAIN before the embedding), clamped SwiGLU experts
// and a shared expert. Tensor names are the release's (`layers.N.attn.wq_a`).
// Specification: transformers models/deepseek_v4/modeling_deepseek_v4.py
// (the stored modular file is older and differs); tests/reference/README.md
// has the math as the reference implements it.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& DeepseekV4Family();

}  // namespace warp::computed
