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

}  // namespace warp
