#pragma once

// `expertd probe DIR...`: the disk under each directory, read as a daemon
// reads its own at start (common/io/disk_probe.h), so that `expertd shard
// --weights` can follow the disks the shards will live on.

#include <filesystem>

#include "absl/status/statusor.h"
#include "common/io/disk_probe.h"

namespace warp::expertd {

// A 256 MiB scratch file is written in `dir` (with O_DIRECT, and synced),
// read back as ProbeDiskReads reads, and removed: the disk under it, whatever
// the directory holds (a small container's banks would measure latency).
// Errors name the directory or the file.
absl::StatusOr<DiskProbe> ProbeDirectory(const std::filesystem::path& dir);

}  // namespace warp::expertd
