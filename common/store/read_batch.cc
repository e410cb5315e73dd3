#include "common/check.h"
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
  mu_.Await(absl::Condition(
      +[](std::deque<std::pair<size_t, absl::StatusOr<ExpertRecord>>>* done) {
        return !done->empty();
      },
      &done_));
  auto next = std::move(done_.front());
  done_.pop_front();
  ++returned_;
  return next;
}

std::vector<absl::StatusOr<ExpertRecord>> ReadBatch::WaitAll() {
  std::vector<absl::StatusOr<ExpertRecord>> records(size_, absl::UnknownError("not read"));
  while (auto next = Next()) records[next->first] = std::move(next->second);
  return records;
}

}  // namespace warp
