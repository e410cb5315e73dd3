#pragma once

// IoEngine: a pool of I/O threads serving record reads by priority — every
// queued DEMAND read before any CERTAIN read before any LOOKAHEAD read, FIFO
// within a priority — so prefetching can never delay a token. Queued
// speculative reads can be dropped before they start.
//
// Thread-safe. Owns its threads (named "warp-io-N"); the destructor finishes
// the reads in progress and drops the queued ones (each reported to `drop`).

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/synchronization/mutex.h"
#include "common/store/expert_source.h"

namespace warp {

class IoEngine {
 public:
  using Handler = std::function<void(const ExpertKey&, Priority)>;

  // `run` performs a read on an I/O thread; `drop` is told of a read removed
  // from the queue without running (DropQueued, destruction); `start` (may be
  // null) runs on each thread before its first read.
  IoEngine(size_t num_threads, Handler run, Handler drop, std::function<void()> start = nullptr);
  ~IoEngine();
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  void Submit(const ExpertKey& key, Priority priority);

  // Removes every queued, not yet started read of `priority` for which `drop`
  // is true (called under the queue's lock: it must not call back); returns
  // how many. The others keep their order.
  size_t DropQueued(Priority priority, absl::FunctionRef<bool(const ExpertKey&)> drop);

  size_t queue_depth() const;
  size_t num_threads() const { return threads_.size(); }

 private:
  struct Job {
    ExpertKey key;
    Priority priority;
  };
  void Loop();

  Handler run_;
  Handler drop_;
  mutable absl::Mutex mu_;
  std::array<std::deque<Job>, 3> queues_ ABSL_GUARDED_BY(mu_);  // indexed by Priority
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace warp
