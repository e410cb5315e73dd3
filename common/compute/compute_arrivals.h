#pragma once

// ComputeArrivals: the loop computed's MoeFfn and expertd's Compute RPC both
// run over a batch of expert reads: each expert computed as its record
// arrives — a record still landing row block by row block
// (ExpertMath::RunLanding), its output kept once the read's verified record
// comes; any other record whole, when it completes.
//
// Thread-compatible: runs on the caller's thread.

#include <cstddef>
#include <optional>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "common/store/expert_source.h"
#include "common/store/landing_record.h"

namespace warp {

// `next`: the batch's next arrival (ReadBatch::NextArrival, timed as the
// caller likes); nullopt once every read has completed.
// `landing(i, record)`: computes expert i from its landing record; true if
// it did (false: the read ended first, and `done` computes it whole).
// `done(i, record, computed_as_landed)`: expert i's verified record.
// Returns the first failed read's status, or `done`'s first failure.
absl::Status ComputeArrivals(
    absl::FunctionRef<std::optional<ReadBatch::Arrival>()> next,
    absl::FunctionRef<bool(size_t, const LandingRecord&)> landing,
    absl::FunctionRef<absl::Status(size_t, const ExpertRecord&, bool)> done);

}  // namespace warp
