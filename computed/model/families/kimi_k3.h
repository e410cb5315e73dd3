#pragma once

// Kimi K3 (`kimi_k3`, 2.8T; the text model under `text_config`, tensors under
// `language_model.`): Kimi-Linear's KDA / MLA hybrid (families/kimi_linear)
// with four changes — KDA's decay lower-bounded and a full-rank output gate;
// MLA with q-LoRA and an output gate; SiTU in every gated MLP; LatentMoE
// (routed experts in a 3584-wide latent between routed_expert_down_proj and
// routed_expert_up_proj); AttnRes instead of the residual stream. Experts
// ship as compressed-tensors MXFP4 (`weight_packed` / `weight_scale`), kept
// native. Specification: transformers models/kimi_k3/modular_kimi_k3.py and
// llama.cpp src/models/kimi-k3.cpp; tests/reference/README.md#kimi-k3 has the
// math as the reference implements it and where sources disagree.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& KimiK3Family();

}  // namespace warp::computed
