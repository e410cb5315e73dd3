#pragma once

// The compute thread pool, passed by reference to the engine. Work is split
// into contiguous index ranges, one per thread; kernels decide nothing about
// threads (STYLE.md), and results never depend on the split because every
// output element is computed whole by one thread. The kinds reach it through
// a ComputeContext (compute_context.h), beside the session's arithmetic.
//
// Thread-compatible: one thread calls ParallelFor at a time.

#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace warp {

class ThreadPool {
 public:
  // `num_threads` >= 1 includes the calling thread; cpus, if non-empty, pins
  // thread i to cpus[i % cpus.size()].
  explicit ThreadPool(size_t num_threads, std::vector<int> cpus = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t num_threads() const { return workers_.size() + 1; }

  // Calls fn(begin, end) over a partition of [0, n) into at most
  // num_threads() contiguous ranges, each a multiple of `grain` (but the last),
  // and returns when all are done.
  void ParallelFor(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn);

 private:
  void WorkerLoop(size_t index);

  absl::Mutex mu_;
  const std::function<void(size_t, size_t)>* job_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::vector<std::pair<size_t, size_t>> ranges_ ABSL_GUARDED_BY(mu_);
  size_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  size_t pending_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace warp
