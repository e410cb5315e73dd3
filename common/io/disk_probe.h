#pragma once

// ProbeDiskReads: how fast this machine reads some files with large O_DIRECT
// reads, as `fio --direct=1 --rw=read --bs=8M --numjobs=4` would: threads take
// 8 MiB pieces of the files in turn until a byte or time limit. What a daemon
// states in Describe (its disk, measured over its own bank files at start)
// and `expertd probe` prints, so that shards can be weighted by their disks.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"

namespace warp {

struct DiskProbeOptions {
  uint64_t max_bytes = uint64_t{256} << 20;
  double max_seconds = 0.5;
  uint64_t piece_bytes = uint64_t{8} << 20;
  int threads = 4;
};

struct DiskProbe {
  uint64_t bytes = 0;  // read
  double seconds = 0;
  // False if a file refused O_DIRECT (tmpfs): the page cache was measured.
  bool direct = true;

  // 0 when nothing was read.
  double bytes_per_second() const { return seconds > 0 ? static_cast<double>(bytes) / seconds : 0; }
};

// Reads the files front to back (whole 4 KiB blocks; a shorter tail is
// skipped), the first piece whatever the time limit. Errors name the file:
// it cannot be opened or read.
absl::StatusOr<DiskProbe> ProbeDiskReads(const std::vector<std::filesystem::path>& files,
                                         const DiskProbeOptions& options);

}  // namespace warp
