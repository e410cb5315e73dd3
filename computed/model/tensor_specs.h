#pragma once

// The tensors a model stores: trunk tensors under their Hugging Face names,
// derived from the family's layer plan (each mixer and FFN kind names what it
// binds), and the matrices of one routed-expert record. The converter, the
// synthesizer and the engine all follow these lists.

#include <string>
#include <string_view>
#include <vector>

#include "common/format/container_writer.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// The family's plan of `config`.
ModelPlan PlanOf(const ModelConfig& config);

// Trunk tensors in file order. 1-D tensors (norms, biases, sinks) and router
// weights are always f32; every other matrix takes `matrix_format`.
std::vector<TensorSpec> TrunkTensorSpecs(const ModelConfig& config, TensorFormat matrix_format);

// The matrices of one routed-expert record, in record order (the family's).
std::vector<TensorSpec> ExpertMatrixSpecs(const ModelConfig& config, TensorFormat format);

// True for tensors stored f32 whatever the trunk format: everything that is not
// a matrix (norms, biases, conv taps, decay rates) and the routers.
bool IsPrecisionCritical(const TensorSpec& spec);

}  // namespace warp::computed
