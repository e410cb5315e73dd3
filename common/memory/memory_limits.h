#pragma once

// How much memory this process may use without paging, read from /proc and the
// cgroup v1/v2 filesystems. Feeds the default cache budget (DESIGN.md "Memory
// budget"); owns no policy: how much of it to take is the planner's decision.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"

namespace warp {

// What the process may use without paging: the smaller of the machine's
// available memory and the room left under every enclosing cgroup limit.
//
// The cgroup usage counts page cache, which the kernel would reclaim before
// paging, so available_bytes() is conservative after heavy file reads.
//
// Thread-compatible value type.
struct MemoryLimits {
  uint64_t mem_total_bytes = 0;                // /proc/meminfo MemTotal
  uint64_t mem_available_bytes = 0;            // /proc/meminfo MemAvailable
  std::optional<uint64_t> cgroup_limit_bytes;  // tightest limit found, if any
  std::optional<uint64_t> cgroup_usage_bytes;  // usage of the cgroup that has that limit
  std::string cgroup_source;  // file the limit came from, for messages ("" if none)
  std::string assumed;        // non-empty when the figures are a given machine's ("--ram 64G")

  // min(mem_available, limit - usage (floored at 0)); a missing usage file
  // counts as zero usage.
  uint64_t available_bytes() const;
};

// Reads the limits with every absolute path prefixed by `root` ("/" in production;
// tests pass a temp dir holding fake proc/ and sys/fs/cgroup/ trees).
//
// Walks the process's cgroup and each ancestor up to the mount root, for the
// v2 hierarchy (memory.max, memory.current under sys/fs/cgroup) and the v1
// memory controller (memory.limit_in_bytes, memory.usage_in_bytes under
// sys/fs/cgroup/memory), and keeps the limit with the least room left. "max"
// and v1 values >= 2^62 mean no limit; missing cgroup files are skipped, so a
// host path that the container's mount does not show still finds the limit at
// the mount root.
//
// Errors: NotFound (or the errno's code) naming proc/meminfo if it cannot be
// read; InvalidArgument naming the file and line for a malformed number or
// line, or a meminfo without MemTotal/MemAvailable. Thread-safe.
absl::StatusOr<MemoryLimits> ReadMemoryLimits(const std::filesystem::path& root = "/");

// One reading of the memory cgroup whose limit binds, for a governor.
struct CgroupPressure {
  uint64_t limit_bytes = 0;
  uint64_t usage_bytes = 0;              // memory.current / memory.usage_in_bytes
  uint64_t inactive_file_bytes = 0;      // page cache the kernel drops first (memory.stat)
  std::optional<double> psi_some_avg10;  // memory.pressure "some avg10" (%), where present

  // What the kernel could not reclaim without paging: usage less inactive
  // page cache (the working set, as kubelet reckons it).
  uint64_t working_bytes() const {
    return usage_bytes > inactive_file_bytes ? usage_bytes - inactive_file_bytes : 0;
  }
  uint64_t headroom_bytes() const {
    return limit_bytes > working_bytes() ? limit_bytes - working_bytes() : 0;
  }
};

// Reads the cgroup whose limit file is `limit_file` (MemoryLimits::cgroup_source):
// v2 (memory.max, memory.current, memory.stat inactive_file, memory.pressure)
// or v1 (memory.limit_in_bytes, memory.usage_in_bytes, memory.stat
// total_inactive_file). Errors name the file; a missing memory.stat or
// memory.pressure reads as 0 / nullopt.
absl::StatusOr<CgroupPressure> ReadCgroupPressure(const std::filesystem::path& limit_file);

}  // namespace warp
