#pragma once

// DeepSeek V4's and V4.1's grouped low-rank output projection: the heads'
// outputs, split into `groups` equal groups, go group g through rows
// [g rank, (g + 1) rank) of wo_a, and the concatenation through wo_b.
//
// Thread-compatible: uses the context's pool.

#include <cstdint>
#include <span>

#include "common/compute/compute_context.h"
#include "common/kernels/matrix_view.h"

namespace warp::computed {

// attn [n][heads head_dim] -> out [n][hidden].
void GroupedOutput(ComputeContext& compute, const kernels::MatrixView& o_a,
                   const kernels::MatrixView& o_b, uint32_t groups, uint32_t rank,
                   std::span<const float> attn, uint32_t n, std::span<float> out);

}  // namespace warp::computed
