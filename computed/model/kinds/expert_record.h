#pragma once

// The matrices of one routed expert's record, by the activation that reads
// them (ExpertActivation): their shapes and formats, in record order, under
// the names of common/compute/record_matrix.h.
// Families choose the shape's numbers (Kimi K3's experts run in a latent
// width); ExpertMath (common/compute/expert_math.h) resolves the same names.
//
// Thread-safe: constants and pure functions.

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/compute/record_matrix.h"
#include "common/format/container_writer.h"

namespace warp::computed {

// kSwiGlu: gate, up, down in `format`.
std::vector<TensorSpec> SwiGluRecord(uint64_t intermediate, uint64_t width, TensorFormat format);
// kClampedSwiGlu: gate_up and down in `format`, their biases f32.
std::vector<TensorSpec> ClampedSwiGluRecord(uint64_t intermediate, uint64_t width,
                                            TensorFormat format);

}  // namespace warp::computed
