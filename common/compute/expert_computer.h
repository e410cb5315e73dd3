#pragma once

// ExpertComputer: runs a layer's routed experts where their records live
// (an expertd's Compute RPC; several daemons' through FanoutExpertSource)
// over rows the caller sends, and hands back each expert's output rows, not
// summed: the caller combines them in its own routing-rank order, as it does
// with records, so the sums are the same on every path. The math is the
// caller's ExpertMath (spec and arithmetic), run by the same code.
//
// Thread-safe.

#include <cstdint>
#include <future>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/compute/expert_math_spec.h"
#include "common/store/expert_source.h"

namespace warp {

// One expert of a pass and the pass's rows it takes, increasing.
struct ExpertRowsTask {
  uint32_t expert = 0;
  std::span<const uint32_t> rows;
};

struct ComputePass {
  uint32_t layer = 0;
  uint64_t width = 0;           // floats a row, in and out
  std::span<const float> rows;  // [num_rows][width]
  std::span<const ExpertRowsTask> experts;
  ExpertMathSpec math;
  bool q8_activations = false;  // the session's Arithmetic
  // A replica holds these experts too: a daemon that is away fails the pass
  // after one attempt instead of being waited for (ExpertSource::ReadOnce).
  bool once = false;
};

struct ComputedExperts {
  // [i]: experts[i]'s output rows, rows.size() x width, in its rows' order.
  std::vector<std::vector<float>> outputs;
  std::vector<Served> served;  // [i]: how experts[i]'s record was read
};

class ExpertComputer {
 public:
  virtual ~ExpertComputer() = default;

  // Starts computing `pass` and returns at once; `pass`'s spans must stay
  // valid until the future is ready. A pass of more rows than a daemon takes
  // at once is split. A failure names the daemon, the layer and what went wrong.
  virtual std::future<absl::StatusOr<ComputedExperts>> Compute(const ComputePass& pass) = 0;
};

}  // namespace warp
