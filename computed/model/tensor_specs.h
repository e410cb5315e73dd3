#pragma once

// The tensors a model stores: trunk tensors under their Hugging Face names,
// derived from the family's layer plan (each mixer and FFN kind names what it
// binds), and the matrices of one routed-expert record. The converter, the
// synthesizer and the engine all follow these lists.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/format/container_writer.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

// The family's plan of `config`.
ModelPlan PlanOf(const ModelConfig& config);

std::string_view TrunkKindName(TrunkKind kind);  // "embedding", "shared_experts", ...
std::optional<TrunkKind> ParseTrunkKind(std::string_view name);

struct TrunkTensor {
  TensorSpec spec;
  TrunkKind kind = TrunkKind::kOther;
  bool f32 = false;  // f32 whatever the trunk format: not a matrix, or TensorRef::f32
  bool zero_padded = false;  // TensorRef::zero_padded
};

// Trunk tensors in file order. Tensors that are not matrices (norms, biases,
// sinks) and those their kind declares f32 (routers, position biases, expert
// ids, mixes) are f32; every other matrix takes `matrix_format`.
std::vector<TensorSpec> TrunkTensorSpecs(const ModelConfig& config, TensorFormat matrix_format);
// The same, each with its kind.
std::vector<TrunkTensor> TrunkTensors(const ModelConfig& config, TensorFormat matrix_format);

// The matrices of one routed-expert record, in record order (the family's).
std::vector<TensorSpec> ExpertMatrixSpecs(const ModelConfig& config, TensorFormat format);

// Whether `layer` of `plan` can be routed before its mixer's output projection
// (engine/early_route.h): a routed (not hashed) MoE layer of a pre-norm model
// whose mixer ends in one (GQA, MLA, KDA).
bool HasEarlyRoute(const ModelPlan& plan, const LayerPlan& layer);
// The name of such a layer's fold, the router folded through the output
// projection: ROUTER.o_proj_fold beside ROUTER.weight.
std::string EarlyRouteFoldName(const LayerPlan& layer);
// The folds a converter writes into the trunk after the tensors above, one per
// layer with an early route, in layer order: f32 [num_experts][o_proj
// in_features]. Optional: a container without them is whole.
std::vector<TensorSpec> EarlyRouteFoldSpecs(const ModelConfig& config);


}  // namespace warp::computed
