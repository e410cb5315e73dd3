#include "common/client/read_job_queue.h"

#include <algorithm>

namespace warp {

ReadJobQueue::ReadJobQueue(size_t num_threads, std::function<void(const Job&)> run)
    : run_(std::move(run)) {
  for (size_t i = 0; i < std::max<size_t>(1, num_threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

ReadJobQueue::~ReadJobQueue() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& thread : threads_) thread.join();
}

void ReadJobQueue::Push(Job job) {
  absl::MutexLock lock(&mu_);
  jobs_.push_back(std::move(job));
}

void ReadJobQueue::Loop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !jobs_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (jobs_.empty()) return;  // stopping, nothing queued
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    run_(job);
  }
}

}  // namespace warp
