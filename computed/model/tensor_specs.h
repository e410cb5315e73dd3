#pragma once

// The tensors an architecture stores: trunk tensors under their Hugging Face
// names, and the matrices of one routed-expert record. The converter, the
// synthesizer and the engine all follow these lists.

#include <vector>

#include "common/format/container_writer.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Trunk tensors in file order. 1-D tensors (norms, biases) and router weights
// are always f32; every other matrix takes `matrix_format`.
std::vector<TensorSpec> TrunkTensorSpecs(const ModelConfig& config, TensorFormat matrix_format);

// gate_proj [moe_intermediate, hidden], up_proj [moe_intermediate, hidden],
// down_proj [hidden, moe_intermediate], in that record order.
std::vector<TensorSpec> ExpertMatrixSpecs(const ModelConfig& config, TensorFormat format);

// True for tensors stored f32 whatever the trunk format (norms, biases, routers).
bool IsPrecisionCritical(const TensorSpec& spec);

}  // namespace warp::computed
