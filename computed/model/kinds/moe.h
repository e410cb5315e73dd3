#pragma once

// A routed-expert FFN's trunk tensors, under the names the family's plan
// gives them: the router with its biases and hash table, the shared experts
// and LatentMoE's projections. The experts themselves are records
// (expert_record.h). The math is engine/ffns/moe_ffn.h and engine/router.h.
//
// Thread-compatible value types.

#include <optional>

#include "computed/model/kinds/gated_mlp.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct MoeTensors {
  TensorRef router;          // [experts, hidden]
  TensorRef router_bias;     // [experts]: added to the logits (gpt-oss)
  TensorRef selection_bias;  // [experts]: e_score_correction_bias, selection only
  std::optional<MlpTensors> shared;
  TensorRef hash_table;                         // [vocab, top-k] expert ids (V4's tid2eid)
  TensorRef latent_down, latent_norm, latent_up;  // LatentMoE (Kimi K3)

  static MoeTensors Of(const ModelConfig& c, const FfnPlan& plan);
  void ForEach(TensorVisitor visit) const;
};

}  // namespace warp::computed
