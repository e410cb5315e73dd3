#pragma once

// `expertd serve`: opens one container (or shard) as an ExpertStore and serves
// it on every listen address (gRPC on unix: and tcp:, the zero-copy fast path
// on fastpath:) until SIGTERM/SIGINT, then drains: in-flight reads finish,
// leases are released, the process exits 0.

#include <string>

#include "absl/status/statusor.h"
#include "common/store/expert_store.h"
#include "warp/v1/config.pb.h"

namespace warp::expertd {

// Reads a textproto ExpertdConfig. Errors name the file, line and column.
absl::StatusOr<v1::ExpertdConfig> LoadConfig(const std::string& path);

// Checks a config and fills defaults (io_threads, max keys, socket mode).
absl::StatusOr<v1::ExpertdConfig> NormalizeConfig(v1::ExpertdConfig config);

// The store's knobs of a config as the ExpertStore::Options computed's
// embedded store is tuned with too (its flags: common/store/store_flags.h):
// the one mapping between the two. Unset (zero) fields give the defaults
// NormalizeConfig fills in; InvalidArgument names an unknown cache_policy or
// io_engine.
absl::StatusOr<ExpertStore::Options> StoreOptionsOf(const v1::ExpertdConfig& config);

// The reverse, for the knobs the store's flags tune (all but budget_bytes and
// staging_slots, which are the daemon's own flags): `config`'s fields of them
// set from `store`.
void SetStoreFields(const ExpertStore::Options& store, v1::ExpertdConfig& config);

// Serves until a termination signal. REQUIRES: SIGTERM and SIGINT are blocked
// in every thread (BlockTerminationSignals() before any thread starts).
absl::Status Serve(const v1::ExpertdConfig& config);

void BlockTerminationSignals();

}  // namespace warp::expertd
