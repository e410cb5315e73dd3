#include "common/store/io_engine.h"

#include <pthread.h>

#include <string>

namespace warp {

IoEngine::IoEngine(size_t num_threads, Handler run, Handler drop, std::function<void()> start)
    : run_(std::move(run)), drop_(std::move(drop)) {
  for (size_t i = 0; i < std::max<size_t>(1, num_threads); ++i) {
    threads_.emplace_back([this, start] {
      if (start) start();
      Loop();
    });
    const std::string name = "warp-io-" + std::to_string(i);
    pthread_setname_np(threads_.back().native_handle(), name.c_str());
  }
}

IoEngine::~IoEngine() {
  std::vector<Job> dropped;
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    for (auto& queue : queues_) {
      dropped.insert(dropped.end(), queue.begin(), queue.end());
      queue.clear();
    }
  }
  for (std::thread& thread : threads_) thread.join();
  for (const Job& job : dropped) drop_(job.key, job.priority);
}

void IoEngine::Submit(const ExpertKey& key, Priority priority) {
  absl::MutexLock lock(&mu_);
  queues_[static_cast<size_t>(priority)].push_back({key, priority});
}

size_t IoEngine::DropQueued(Priority priority, absl::FunctionRef<bool(const ExpertKey&)> drop) {
  std::deque<Job> dropped;
  {
    absl::MutexLock lock(&mu_);
    std::deque<Job>& queue = queues_[static_cast<size_t>(priority)];
    std::deque<Job> kept;
    for (Job& job : queue) (drop(job.key) ? dropped : kept).push_back(job);
    queue.swap(kept);
  }
  for (const Job& job : dropped) drop_(job.key, job.priority);
  return dropped.size();
}

size_t IoEngine::queue_depth() const {
  absl::MutexLock lock(&mu_);
  size_t depth = 0;
  for (const auto& queue : queues_) depth += queue.size();
  return depth;
}

void IoEngine::Loop() {
  while (true) {
    Job job;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        if (stop_) return true;
        for (const auto& queue : queues_) {
          if (!queue.empty()) return true;
        }
        return false;
      };
      mu_.Await(absl::Condition(&ready));
      if (stop_) return;
      for (auto& queue : queues_) {
        if (queue.empty()) continue;
        job = queue.front();
        queue.pop_front();
        break;
      }
    }
    run_(job.key, job.priority);
  }
}

}  // namespace warp
