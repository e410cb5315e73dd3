#pragma once

// DeepSeek V4.1 Flash (`deepseek_v41`, the text model under `text_config`):
// V4's compressed MQA reorganised (CSA2, model/kinds/shared_compressed_mqa):
// a few KV source layers compute the compressed cache (ratio 2 pooled pairs,
// ratio 1 every position) that the layers after them read, a few index
// sources pick the entries their followers attend to, and a candidate
// source's blocks bound the later picks. Single-pass hyper-connections (a
// site's `pre` collapses the streams for the next sublayer, no hc_head); MoE
// everywhere with sqrt-softplus routing over logits / gate_temp, the
// selection bias, clamped SwiGLU experts (the K3 MXFP4 layout) and one shared
// expert; no hash layers. At engram_layer_ids an engram memory (model/kinds/
// engram) adds n-gram rows from its own bank. Tensor names are the release's
// (`layers.N.attn.wq_a`). Specification: transformers models/deepseek_v41/
// modeling_deepseek_v41.py; vLLM models/deepseek_v4_1/common/engram.py for
// the engram hash; docs/ENGINE.md#deepseek-v41 says where sources differ.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& DeepseekV41Family();

}  // namespace warp::computed
