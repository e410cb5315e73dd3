#pragma once

// ExpertMath: how one routed expert's record is computed, per
// ExpertActivation. The record's matrices are reached by name (gate/up/down,
// or gate_up), resolved once per bank when the model opens, never by index.
//
// Thread-compatible: Run uses the pool for matrix rows.

#include <cstdint>
#include <memory>
#include <span>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/format/codebooks.h"
#include "common/format/manifest.h"
#include "common/store/expert_source.h"
#include "common/store/landing_record.h"
#include "computed/engine/compute_context.h"
#include "computed/model/layer_plan.h"

namespace warp::computed {

class ExpertMath {
 public:
  virtual ~ExpertMath() = default;

  // xs [m][hidden] -> out [m][hidden] through the expert in `record`.
  virtual void Run(const ExpertRecord& record, std::span<const float> xs, uint32_t m,
                   std::span<float> out) const = 0;

  // Blocks until at least the given bytes of a landing record are in (or its
  // read has ended); returns the bytes in (LandingRecord::WaitFor).
  using WaitForBytes = absl::FunctionRef<uint64_t(uint64_t bytes)>;

  // Run's bits from a record still landing, each block of rows computed as
  // it lands (by default: once all has). False, with `out` undefined, if the
  // read ended first. The caller uses `out` only once the read's verified
  // record has come.
  virtual bool RunLanding(const LandingRecord& landing, std::span<const float> xs, uint32_t m,
                          std::span<float> out, WaitForBytes wait) const;

  // The math of `plan`'s experts over the records of `bank`, whose
  // vector-quantized matrices decode with `codebooks` (which must outlive it);
  // FailedPrecondition naming the layer and matrix when the bank lacks one.
  static absl::StatusOr<std::unique_ptr<ExpertMath>> Create(const FfnPlan& plan,
                                                            const BankEntry& bank,
                                                            const Codebooks& codebooks,
                                                            ComputeContext& compute);
};

}  // namespace warp::computed
