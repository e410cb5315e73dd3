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

#include <string>

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& DeepseekV4Family();

// What DeepSeek V4.1 (families/deepseek_v41) shares with V4.
namespace deepseek_v4 {

// The keys V4 and V4.1 read alike: sqrt-softplus routing, experts and the
// shared expert, head_dim, q-LoRA, rope dims, the window, the SwiGLU clamp,
// compress_rope_theta, the grouped output, the indexer's shape and mHC.
absl::Status ParseCommon(const nlohmann::ordered_json& json, ModelConfig& config);
// The rope of a sliding layer (rope_theta, no YaRN) or of a compressed one
// (compress_rope_theta, YaRN whose cos/sin factor is 1, as transformers'
// config forces for V4 and V4.1).
RopePlan Rope(const ModelConfig& config, bool compressed);
// Layer `layer_prefix`'s ("layers.N.") pre-norm names, routed experts
// (sqrt-softplus, the selection bias `ffn.gate.bias`, shared experts) and
// hyper-connection sites.
LayerPlan Layer(const ModelConfig& config, const std::string& layer_prefix);
// Whether the block-FP8 release stores trunk matrix `name` in FP8: the
// attention's projections, the indexer's query, the shared experts (and
// V4.1's engram wkv); not the compressors, nor the indexer's weights_proj.
bool ReleaseBlockQuantizes(std::string_view name);
// ffn.experts.E.w1|w3|w2.weight: values, or FP4 codes with `.scale` E8M0.
CheckpointSlice ExpertSlice(uint32_t layer, uint32_t expert, std::string_view matrix);

}  // namespace deepseek_v4

}  // namespace warp::computed
