#pragma once

// ReadJobQueue: the reader threads of a remote ExpertSource. Read() and
// Prefetch() push a job and return at once; a reader thread runs it (the
// daemon round trip, with its retries) so the caller never waits on a socket.
//
// Thread-safe. The destructor finishes the queued jobs, then joins.

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/store/expert_source.h"

namespace warp {

class ReadJobQueue {
 public:
  struct Job {
    std::vector<ExpertKey> keys;
    Priority priority = Priority::kDemand;
    std::shared_ptr<ReadBatch> batch;  // null: a Prefetch hint
    bool once = false;                 // ReadOnce: one attempt, no waiting
  };

  // `run` is called on one of `num_threads` owned threads (at least one).
  ReadJobQueue(size_t num_threads, std::function<void(const Job&)> run);
  ~ReadJobQueue();
  ReadJobQueue(const ReadJobQueue&) = delete;
  ReadJobQueue& operator=(const ReadJobQueue&) = delete;

  void Push(Job job);

 private:
  void Loop();

  std::function<void(const Job&)> run_;
  absl::Mutex mu_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace warp
