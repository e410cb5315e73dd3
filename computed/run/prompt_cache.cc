#include "computed/run/prompt_cache.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp::computed {

absl::StatusOr<size_t> PromptCache::Keep(std::span<const int32_t> ids, uint32_t reserve,
                                         const std::string& what) {
  if (ids.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (session_.trained_positions() > 0 && ids.size() > session_.trained_positions()) {
    return absl::ResourceExhaustedError(
        absl::StrCat(what, " needs ", ids.size(), " positions; the model was trained on at most ",
                     session_.trained_positions(), " (max_position_embeddings)"));
  }
  if (ids.size() + reserve > session_.max_positions()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        what, " needs ", ids.size(), " positions plus ", reserve,
        " for the reply; the context holds ", session_.max_positions(), " (--context)"));
  }
  size_t shared = SharedPrefix(ids);
  from_disk_ = 0;
  if (disk_ != nullptr) shared = LoadFromDisk(ids, shared);
  // Keep at least the last prompt token to recompute: its logits start the reply.
  shared = std::min(shared, ids.size() - 1);
  // A sliding-window layer may no longer hold what precedes `shared`: it says
  // where it can continue from, and that much more is prefilled.
  shared = session_.Rewind(static_cast<uint32_t>(shared), sequence_);
  in_cache_.assign(ids.begin(), ids.begin() + shared);
  reused_ = static_cast<uint32_t>(shared);
  new_ = static_cast<uint32_t>(ids.size() - shared);
  return shared;
}

absl::StatusOr<std::vector<float>> PromptCache::BringUpTo(std::span<const int32_t> ids,
                                                          uint32_t reserve,
                                                          const std::string& what) {
  WARP_ASSIGN_OR_RETURN(const size_t shared, Keep(ids, reserve, what));
  // A recurrent layer can only return to a checkpoint: take one before the
  // last prompt token, which the next prompt keeps (or recomputes) at the least.
  std::span<const int32_t> rest = ids.subspan(shared);
  if (rest.size() > 1) {
    WARP_RETURN_IF_ERROR(session_.Feed(rest.first(rest.size() - 1), sequence_));
    in_cache_.insert(in_cache_.end(), rest.begin(), rest.end() - 1);
    rest = rest.last(1);
  }
  session_.Checkpoint(sequence_);
  WARP_ASSIGN_OR_RETURN(std::vector<float> logits, session_.PrefillLast(rest, sequence_));
  in_cache_.push_back(rest[0]);
  if (new_ > 0) SaveToDisk();
  return logits;
}

size_t PromptCache::LoadFromDisk(std::span<const int32_t> ids, size_t shared) {
  std::optional<DiskPromptCache::Hit> hit = disk_->Lookup(ids, shared);
  if (!hit) return shared;
  const absl::Status loaded = session_.transformer().LoadSequence(hit->state, sequence_);
  if (!loaded.ok()) {  // logged and removed by the cache; the sequence was left empty
    disk_->Refuse(hit->ids, loaded);
    in_cache_.clear();
    return 0;
  }
  in_cache_ = std::move(hit->ids);
  from_disk_ = static_cast<uint32_t>(in_cache_.size());
  return in_cache_.size();
}

void PromptCache::SaveToDisk() {
  if (disk_ == nullptr || in_cache_.empty() || session_.position(sequence_) != in_cache_.size() ||
      disk_->Holds(in_cache_)) {  // held already: no state serialized for nothing
    return;
  }
  disk_->Store(in_cache_, session_.transformer().SaveSequence(sequence_));
}

size_t PromptCache::SharedPrefix(std::span<const int32_t> ids) const {
  const size_t limit = std::min(in_cache_.size(), ids.size());
  size_t shared = 0;
  while (shared < limit && in_cache_[shared] == ids[shared]) ++shared;
  return shared;
}

}  // namespace warp::computed
