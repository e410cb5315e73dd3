#include "common/compute/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>

namespace warp {
namespace {

void PinToCpu(std::thread::native_handle_type handle, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(handle, sizeof(set), &set);
}

}  // namespace

ThreadPool::ThreadPool(size_t num_threads, std::vector<int> cpus) {
  for (size_t i = 1; i < std::max<size_t>(1, num_threads); ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
  if (!cpus.empty()) {
    PinToCpu(pthread_self(), cpus[0]);
    for (size_t i = 0; i < workers_.size(); ++i) {
      PinToCpu(workers_[i].native_handle(), cpus[(i + 1) % cpus.size()]);
    }
  }
}

ThreadPool::~ThreadPool() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::ParallelFor(size_t n, size_t grain,
                             const std::function<void(size_t, size_t)>& fn) {
  const size_t threads = num_threads();
  grain = std::max<size_t>(1, grain);
  const size_t chunks = (n + grain - 1) / grain;
  if (threads == 1 || chunks <= 1) {
    if (n > 0) fn(0, n);
    return;
  }
  std::vector<std::pair<size_t, size_t>> ranges(threads, {0, 0});
  for (size_t t = 0; t < threads; ++t) {
    const size_t begin = std::min(n, chunks * t / threads * grain);
    const size_t end = std::min(n, chunks * (t + 1) / threads * grain);
    ranges[t] = {begin, end};
  }
  {
    absl::MutexLock lock(&mu_);
    job_ = &fn;
    ranges_ = ranges;
    pending_ = workers_.size();
    ++generation_;
  }
  if (ranges[0].first < ranges[0].second) fn(ranges[0].first, ranges[0].second);
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](size_t* pending) { return *pending == 0; }, &pending_));
  job_ = nullptr;
}

void ThreadPool::WorkerLoop(size_t index) {
  size_t seen = 0;
  while (true) {
    const std::function<void(size_t, size_t)>* job;
    std::pair<size_t, size_t> range;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this, &seen]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || generation_ != seen; };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      seen = generation_;
      job = job_;
      range = ranges_[index];
    }
    if (range.first < range.second) (*job)(range.first, range.second);
    absl::MutexLock lock(&mu_);
    --pending_;
  }
}

}  // namespace warp
