#pragma once

// ExpertMath: how one routed expert's record is computed, per
// ExpertActivation. The record's matrices are reached by name (gate/up/down,
// or gate_up, record_matrix.h), resolved once per bank when the model opens,
// never by index. computed's engine and expertd's compute RPC both run it,
// so an expert's output has the same bits wherever it is computed.
//
// Thread-compatible: Run uses the pool for matrix rows.

#include <cstdint>
#include <memory>
#include <span>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "common/compute/compute_context.h"
#include "common/compute/expert_math_spec.h"
#include "common/format/codebooks.h"
#include "common/format/manifest.h"
#include "common/store/expert_source.h"
#include "common/store/landing_record.h"

namespace warp {

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

  // The math of `spec`'s experts over the records of `bank`, whose
  // vector-quantized matrices decode with `codebooks` (which must outlive it);
  // FailedPrecondition naming the layer and matrix when the bank lacks one.
  static absl::StatusOr<std::unique_ptr<ExpertMath>> Create(const ExpertMathSpec& spec,
                                                            const BankEntry& bank,
                                                            const Codebooks& codebooks,
                                                            ComputeContext& compute);

  // What it computes: what a daemon asked to compute these experts is sent.
  const ExpertMathSpec& spec() const { return spec_; }

 private:
  ExpertMathSpec spec_;
};

}  // namespace warp
