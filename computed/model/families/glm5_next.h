#pragma once

// GLM-5.3-Flash (`glm5_next`; the text model under `text_config`, tensors
// under `model.language_model.`): KDA layers (Kimi's mixer with the
// lower-bounded decay and the low-rank output gate) and, per explicit
// `layer_types`, DSA layers — MLA without rope whose positions a pooled
// indexer picks (engine/mixers/pooled_indexer); hyper-connections as
// DeepSeek V4 with the streams' mean at the head; clamped SwiGLU in dense
// MLPs, shared and routed experts; sigmoid group routing with a selection
// bias. Specification: transformers models/glm5_next/modeling_glm5_next.py
// (the version with Glm5NextTextIndexer); tests/reference/README.md has the
// math as the reference implements it.

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& Glm5NextFamily();

}  // namespace warp::computed
