#include "computed/engine/mixers/grouped_output.h"

#include <algorithm>
#include <vector>

#include "common/compute/linear.h"
#include "common/kernels/matmul.h"

namespace warp::computed {

void GroupedOutput(ComputeContext& compute, const kernels::MatrixView& o_a,
                   const kernels::MatrixView& o_b, uint32_t groups, uint32_t rank,
                   std::span<const float> attn, uint32_t n, std::span<float> out) {
  const uint64_t width = attn.size() / n, group_width = width / groups;
  std::vector<float> grouped(uint64_t{n} * groups * rank), slice(uint64_t{n} * group_width);
  for (uint32_t g = 0; g < groups; ++g) {
    for (uint32_t t = 0; t < n; ++t) {
      std::copy_n(&attn[uint64_t{t} * width + g * group_width], group_width,
                  &slice[uint64_t{t} * group_width]);
    }
    kernels::MatMulRows(o_a, slice, n, uint64_t{g} * rank, uint64_t{g + 1} * rank, grouped,
                        uint64_t{groups} * rank);
  }
  Linear(compute, o_b, grouped.data(), n, out.data());
}

}  // namespace warp::computed
