#include "common/compute/compute_arrivals.h"

#include "absl/container/flat_hash_set.h"
#include "common/status.h"

namespace warp {

absl::Status ComputeArrivals(
    absl::FunctionRef<std::optional<ReadBatch::Arrival>()> next,
    absl::FunctionRef<bool(size_t, const LandingRecord&)> landing,
    absl::FunctionRef<absl::Status(size_t, const ExpertRecord&, bool)> done) {
  absl::flat_hash_set<size_t> computed_landing;
  while (std::optional<ReadBatch::Arrival> arrival = next()) {
    if (arrival->landing) {
      if (landing(arrival->index, *arrival->landing)) computed_landing.insert(arrival->index);
      continue;
    }
    const absl::StatusOr<ExpertRecord>& record = *arrival->done;
    if (!record.ok()) return record.status();
    WARP_RETURN_IF_ERROR(done(arrival->index, *record, computed_landing.contains(arrival->index)));
  }
  return absl::OkStatus();
}

}  // namespace warp
