#include "common/memory/memory_governor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/logging.h"

namespace warp {

uint64_t MemoryGovernor::NextCapacity(const Options& options, const CgroupPressure& reading,
                                      uint64_t capacity) {
  const uint64_t headroom = reading.headroom_bytes();
  const uint64_t margin = options.margin_bytes;
  const bool stalling =
      reading.psi_some_avg10.has_value() && *reading.psi_some_avg10 > options.psi_threshold;
  uint64_t next = capacity;
  if (headroom < margin / 2 || stalling) {
    // Free the margin again; under PSI stalls with room to spare, a quarter of it.
    const uint64_t deficit = headroom < margin ? margin - headroom : margin / 4;
    next = capacity > deficit ? capacity - deficit : 0;
  } else if (headroom > 2 * margin && capacity < options.max_capacity_bytes) {
    // Grow into the room above the margin, half of it at a time: the cache
    // fills as records come, and the next reading sees what it took.
    next = capacity + (headroom - margin) / 2;
  }
  return std::clamp(next, options.min_capacity_bytes,
                    std::max(options.min_capacity_bytes, options.max_capacity_bytes));
}

MemoryGovernor::MemoryGovernor(Options options, uint64_t capacity,
                               std::function<uint64_t(uint64_t)> resize)
    : options_(std::move(options)),
      resize_(std::move(resize)),
      capacity_(capacity),
      thread_([this] { Run(); }) {}

MemoryGovernor::~MemoryGovernor() {
  stop_.Notify();
  thread_.join();
}

void MemoryGovernor::Run() {
  while (!stop_.WaitForNotificationWithTimeout(options_.interval)) Step();
}

void MemoryGovernor::Step() {
  auto& log = Logger("memory.governor");
  absl::StatusOr<CgroupPressure> reading = ReadCgroupPressure(options_.limit_file);
  if (!reading.ok()) {
    if (!read_failed_) log.warn("cannot read memory pressure: {}", reading.status().ToString());
    read_failed_ = true;
    return;
  }
  const uint64_t now = capacity_.load();
  const uint64_t want = NextCapacity(options_, *reading, now);
  if (want == now) return;
  const uint64_t got = resize_(want);
  if (got < now) ++shrinks_;
  if (got > now) ++grows_;
  capacity_.store(got);  // after the counts: whoever sees the capacity sees them
  if (got < now) {
    const std::string what = absl::StrCat(
        "memory pressure under ", options_.limit_file.string(), " (",
        FormatBytes(reading->working_bytes()), " of ", FormatBytes(reading->limit_bytes),
        " in use): expert cache ", FormatBytes(now), " -> ", FormatBytes(got));
    if (!warned_) {
      log.warn("{}", what);
      warned_ = true;
    } else {
      log.debug("{}", what);
    }
  } else if (got > now) {
    log.debug("memory pressure gone: expert cache {} -> {}", FormatBytes(now), FormatBytes(got));
  }
}

}  // namespace warp
