#pragma once

// Kimi-Linear (`kimi_linear`, Kimi-Linear-48B-A3B): a hybrid of Kimi Delta
// Attention layers (gated delta-rule linear attention with a fixed-size
// recurrent state, engine/mixers/kda_attention) and MLA layers without rope,
// chosen by the 1-based lists of `linear_attn_config`; DeepSeek-style sigmoid
// routing with a selection-only bias, shared experts and a first dense layer;
// experts `block_sparse_moe.experts.E.w1|w3|w2` (gate|up|down).
// Specification: Moonshot's modeling_kimi.py (the release's remote code) and
// fla's naive KDA recurrence; tests/reference/README.md#kimi_linear has the
// math as the reference implements it and where sources disagree.

#include <string>

#include "computed/model/family.h"

namespace warp::computed {

const ModelFamily& KimiLinearFamily();

// What Kimi K3 (families/kimi_k3) shares with Kimi-Linear.
namespace kimi {

// The Kimi-Linear keys of `json` (config.json, or K3's text_config): routing,
// shared experts and dense layers, linear_attn_config, MLA.
absl::Status ParseKimiLinear(const nlohmann::ordered_json& json, ModelConfig& config);
// Layer `layer`'s mixer, KDA or MLA, under `layer_prefix` ("model.layers.N.").
MixerPlan Mixer(const ModelConfig& config, uint32_t layer, const std::string& layer_prefix);

}  // namespace kimi

}  // namespace warp::computed
