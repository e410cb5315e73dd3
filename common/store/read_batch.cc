#include "common/check.h"
#include "common/store/engine_activity.h"
#include "common/store/expert_source.h"

// GCC 12 reports a false maybe-uninitialized on moving an
// optional<pair<size_t, StatusOr<ExpertRecord>>>; the value is always set.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace warp {

void ReadBatch::Complete(size_t index, absl::StatusOr<ExpertRecord> record) {
  WARP_CHECK(index < size_);
  Forward forward;
  {
    absl::MutexLock lock(&mu_);
    completed_[index] = true;
    if (!forward_) {
      done_.emplace_back(index, std::move(record));
      return;
    }
    forward = forward_;
  }
  forward(index, std::move(record));
}

void ReadBatch::ForwardTo(Forward forward) {
  std::deque<std::pair<size_t, absl::StatusOr<ExpertRecord>>> earlier;
  {
    absl::MutexLock lock(&mu_);
    forward_ = forward;
    earlier.swap(done_);
  }
  for (auto& [index, record] : earlier) forward(index, std::move(record));
}

std::optional<std::pair<size_t, absl::StatusOr<ExpertRecord>>> ReadBatch::Next() {
  absl::MutexLock lock(&mu_);
  if (returned_ == size_) return std::nullopt;
  if (done_.empty()) {
    EngineActivity::Waiting waiting;
    mu_.Await(absl::Condition(
        +[](std::deque<std::pair<size_t, absl::StatusOr<ExpertRecord>>>* done) {
          return !done->empty();
        },
        &done_));
  }
  auto next = std::move(done_.front());
  done_.pop_front();
  ++returned_;
  return next;
}

void ReadBatch::Landing(size_t index, std::shared_ptr<const LandingRecord> landing) {
  WARP_CHECK(index < size_);
  absl::MutexLock lock(&mu_);
  if (!forward_ && !completed_[index]) landing_.emplace_back(index, std::move(landing));
}

std::optional<ReadBatch::Arrival> ReadBatch::NextArrival() {
  absl::MutexLock lock(&mu_);
  while (true) {
    if (returned_ == size_) return std::nullopt;
    if (done_.empty() && landing_.empty()) {
      EngineActivity::Waiting waiting;
      mu_.Await(absl::Condition(
          +[](ReadBatch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(batch->mu_) {
            return !batch->done_.empty() || !batch->landing_.empty();
          },
          this));
    }
    if (!done_.empty()) {
      Arrival arrival{.index = done_.front().first, .done = std::move(done_.front().second)};
      done_.pop_front();
      ++returned_;
      return arrival;
    }
    auto [index, landing] = std::move(landing_.front());
    landing_.pop_front();
    if (!completed_[index]) return Arrival{.index = index, .landing = std::move(landing)};
  }
}

std::vector<absl::StatusOr<ExpertRecord>> ReadBatch::WaitAll() {
  std::vector<absl::StatusOr<ExpertRecord>> records(size_, absl::UnknownError("not read"));
  while (auto next = Next()) records[next->first] = std::move(next->second);
  return records;
}

void ForwardInto(ReadBatch& part, std::shared_ptr<ReadBatch> whole, std::vector<size_t> positions) {
  part.ForwardTo([whole = std::move(whole), positions = std::move(positions)](
                     size_t index, absl::StatusOr<ExpertRecord> record) {
    whole->Complete(positions[index], std::move(record));
  });
}

}  // namespace warp
