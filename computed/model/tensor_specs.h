#pragma once

// The tensors an architecture stores: trunk tensors under their Hugging Face
// names, and the matrices of one routed-expert record. The converter, the
// synthesizer and the engine all follow these lists.

#include <string>
#include <string_view>
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

// Hugging Face name of the router weight of MoE layer `layer`.
std::string RouterName(const ModelConfig& config, uint32_t layer);

// Hugging Face name of one routed expert's matrix ("gate_proj", "up_proj",
// "down_proj"); Mixtral's w1/w3/w2 map to gate/up/down.
std::string ExpertTensorName(const ModelConfig& config, uint32_t layer, uint32_t expert,
                             std::string_view matrix);

}  // namespace warp::computed
