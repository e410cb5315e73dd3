#pragma once

// `expertd probe DIR...`: each directory's disk, as a daemon would measure it
// at start (common/io/disk_probe.h), so that `expertd shard --weights` can
// follow the disks the shards will live on.

#include <filesystem>

#include "absl/status/statusor.h"
#include "common/io/disk_probe.h"

namespace warp::expertd {

// A container's bank files are read; any other directory gets a 256 MiB
// scratch file, written, read back and removed. Errors name the directory.
absl::StatusOr<DiskProbe> ProbeDirectory(const std::filesystem::path& dir);

}  // namespace warp::expertd
