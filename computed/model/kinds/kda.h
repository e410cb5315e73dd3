#pragma once

// Kimi Delta Attention (KimiDeltaAttention of modeling_kimi.py): gated
// delta-rule linear attention with a fixed-size state (Kimi-Linear, Kimi K3,
// GLM-5.3): its plan parameters, the trunk tensors it binds, under the
// release's names, and the state it keeps. The math is
// engine/mixers/kda_attention.h.
//
// Thread-compatible value types.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct KdaTensors;

struct KdaParams {
  using Tensors = KdaTensors;  // the tensors it binds
  static constexpr TrunkKind kTrunkKind = TrunkKind::kLinearAttention;
  static constexpr bool kEndsInOutputProjection = true;  // o_proj (EarlyRoute)

  // A_log as the release stores it: Kimi-Linear [1, 1, H, 1], else [H].
  std::vector<uint64_t> a_log_shape;
  // Kimi K3's release pads A_log with zeros to the head dimension; llama.cpp's
  // converter and the transformers draft write [H]. Both convert.
  bool a_log_zero_padded = false;
};

// Under the mixer's prefix ("model.layers.N.self_attn.").
struct KdaTensors {
  std::array<TensorRef, 3> proj;  // q, k, v _proj.weight [width, hidden]
  std::array<TensorRef, 3> conv;  // q, k, v _conv1d.weight [width, 1, kernel]: depthwise
  TensorRef a_log, dt_bias;
  TensorRef f_a, f_b, b;     // the decay's low-rank f_a/f_b_proj, the beta b_proj
  TensorRef g_full;          // g_proj (full_rank_gate), else the low-rank g_a, g_b
  TensorRef g_a, g_b;
  TensorRef o_norm, o;       // o_norm [head_dim], o_proj

  static KdaTensors Of(const ModelConfig& c, const std::string& prefix, const KdaParams& params);
  void ForEach(TensorVisitor visit) const;
};

// Independent of the context: the state and its chat checkpoint.
uint64_t StateBytes(const ModelConfig& c, const KdaParams& params, uint64_t context);

}  // namespace warp::computed
