#pragma once

// MemoryGovernor: keeps a process inside its memory cgroup by resizing its
// expert cache before the kernel has to reclaim or kill (DESIGN.md invariant 4).
// Every interval it reads the cgroup (usage less inactive page cache, PSI
// where present); when the headroom under the limit falls below half the
// margin, or PSI says tasks stall on memory, it shrinks the cache until the
// margin is free again; when the headroom is back above twice the margin it
// grows the cache toward its budget. NextCapacity is the policy, a pure
// function; the rest is the thread that applies it.
//
// Thread-safe: the governor's own thread calls `resize`; the counters may be
// read from any thread.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <thread>

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/memory/memory_limits.h"

namespace warp {

class MemoryGovernor {
 public:
  struct Options {
    std::filesystem::path limit_file;  // the binding cgroup's (MemoryLimits::cgroup_source)
    uint64_t margin_bytes = 0;         // headroom to keep under the limit
    uint64_t max_capacity_bytes = 0;   // the budget's cache: never grown past it
    uint64_t min_capacity_bytes = 0;   // never shrunk below it
    double psi_threshold = 10.0;       // "some avg10" (%) that counts as pressure
    absl::Duration interval = absl::Milliseconds(200);
  };

  // The cache capacity for `reading` when it is `capacity` now.
  static uint64_t NextCapacity(const Options& options, const CgroupPressure& reading,
                               uint64_t capacity);

  // Starts the thread. `resize(bytes)` sets the cache's capacity and returns
  // the capacity in force; it is first called only on a change.
  MemoryGovernor(Options options, uint64_t capacity, std::function<uint64_t(uint64_t)> resize);
  ~MemoryGovernor();  // stops and joins the thread
  MemoryGovernor(const MemoryGovernor&) = delete;
  MemoryGovernor& operator=(const MemoryGovernor&) = delete;

  uint64_t capacity() const { return capacity_.load(); }
  uint64_t shrinks() const { return shrinks_.load(); }
  uint64_t grows() const { return grows_.load(); }

 private:
  void Run();
  void Step();

  const Options options_;
  const std::function<uint64_t(uint64_t)> resize_;
  std::atomic<uint64_t> capacity_;
  std::atomic<uint64_t> shrinks_{0}, grows_{0};
  bool warned_ = false;       // the first shrink is logged as a warning, the rest at debug
  bool read_failed_ = false;  // a failed reading is logged once
  absl::Notification stop_;
  std::thread thread_;  // last: runs over everything above
};

}  // namespace warp
