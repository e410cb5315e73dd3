#pragma once

// The check a client applies to a record it received from an expertd (over
// gRPC, or in place in a daemon's shared cache), before anyone sees it.

#include <cstddef>
#include <span>

#include "absl/status/status.h"
#include "common/store/expert_source.h"

namespace warp {

// Checks a received record the way BankSet checks one read from disk, with
// what the client knows: the key it asked for and the daemon's fingerprint.
// Size (a whole number of 4096-byte blocks), footer and, with `check_crc`,
// payload CRC32C; errors are DataLoss naming the key.
absl::Status CheckReceived(std::span<const std::byte> bytes, const ExpertKey& key,
                           uint64_t fingerprint, bool check_crc = true);

}  // namespace warp
