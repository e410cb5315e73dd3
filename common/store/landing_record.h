#pragma once

// LandingRecord: a record still coming off the disk, for an engine that
// computes on its first rows while the rest are read. The bytes WaitFor says
// have landed are final but not yet verified: only the record the read then
// completes with (footer and CRC checked) may be trusted, and what was
// computed from a landing record is thrown away if the read fails.
//
// Its memory (a slot of the store's arena) stays mapped for the store's life;
// it holds the record's bytes from the read's start until the engine's copy
// of the completed record is dropped. After a failed read the slot may be
// reused at once, so a waiter sees other bytes, never unmapped memory.
//
// Thread-safe: one reading thread tells, any thread waits.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/store/engine_activity.h"

namespace warp {

class LandingRecord {
 public:
  explicit LandingRecord(std::span<const std::byte> data) : data_(data) {}

  std::span<const std::byte> data() const { return data_; }

  // Blocks until at least `bytes` (clamped to the record) have landed or the
  // read has ended, landed or not; returns the bytes landed by then.
  uint64_t WaitFor(uint64_t bytes) const {
    const uint64_t want = bytes < data_.size() ? bytes : data_.size();
    uint64_t landed = landed_.load(std::memory_order_acquire);
    if (landed < want && landed != kEnded) {
      EngineActivity::Waiting waiting;
      while (landed < want && landed != kEnded) {
        landed_.wait(landed, std::memory_order_acquire);
        landed = landed_.load(std::memory_order_acquire);
      }
    }
    return landed == kEnded ? ended_at_.load(std::memory_order_acquire) : landed;
  }

  // The reading thread: `bytes` from the start have landed (never less than before).
  void Landed(uint64_t bytes) {
    landed_.store(bytes, std::memory_order_release);
    landed_.notify_all();
  }

  // The reading thread: the read is over, whatever it brought.
  void End() {
    const uint64_t landed = landed_.load(std::memory_order_relaxed);
    ended_at_.store(landed == kEnded ? 0 : landed, std::memory_order_release);
    landed_.store(kEnded, std::memory_order_release);
    landed_.notify_all();
  }

 private:
  static constexpr uint64_t kEnded = UINT64_MAX;
  const std::span<const std::byte> data_;
  mutable std::atomic<uint64_t> landed_{0};  // kEnded once the read is over
  std::atomic<uint64_t> ended_at_{0};        // landed_ when End() was called
};

}  // namespace warp
