#include "common/client/fanout_source.h"

#include "absl/strings/str_cat.h"
#include "common/format/engram_table.h"

namespace warp {

absl::StatusOr<std::unique_ptr<FanoutExpertSource>> FanoutExpertSource::Create(
    std::vector<Member> members) {
  auto fanout = std::unique_ptr<FanoutExpertSource>(new FanoutExpertSource(std::move(members)));
  for (size_t m = 0; m < fanout->members_.size(); ++m) {
    for (const ExpertKey& key : fanout->members_[m].held) {
      auto [it, inserted] = fanout->owner_.emplace(key, m);
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("expert ", key.expert, " of layer ", key.layer, " is held by both ",
                         fanout->members_[it->second].name, " and ", fanout->members_[m].name));
      }
    }
    for (uint32_t layer : fanout->members_[m].engram_layers) {
      fanout->engram_holders_[EngramKeyLayer(layer)].push_back(m);
    }
  }
  return fanout;
}

std::vector<std::vector<size_t>> FanoutExpertSource::Split(std::span<const ExpertKey> keys) const {
  std::vector<std::vector<size_t>> parts(members_.size() + 1);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].layer >= kEngramKeyBase) {
      // An engram record: spread over the members holding its table by record.
      auto holders = engram_holders_.find(keys[i].layer);
      parts[holders == engram_holders_.end()
                ? members_.size()
                : holders->second[keys[i].expert % holders->second.size()]]
          .push_back(i);
      continue;
    }
    auto it = owner_.find(keys[i]);
    parts[it == owner_.end() ? members_.size() : it->second].push_back(i);
  }
  return parts;
}

std::shared_ptr<ReadBatch> FanoutExpertSource::Read(std::span<const ExpertKey> keys,
                                                    Priority priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  std::vector<std::vector<size_t>> parts = Split(keys);
  for (size_t i : parts.back()) {
    batch->Complete(i, absl::NotFoundError(absl::StrCat("expert ", keys[i].expert, " of layer ",
                                                        keys[i].layer, ": held by no shard")));
  }
  for (size_t m = 0; m < members_.size(); ++m) {
    if (parts[m].empty()) continue;
    std::vector<ExpertKey> sub;
    for (size_t i : parts[m]) sub.push_back(keys[i]);
    // Each completion goes straight to the caller's batch, as it lands.
    ForwardInto(*members_[m].source->Read(sub, priority), batch, std::move(parts[m]));
  }
  return batch;
}

std::map<std::string, uint64_t> FanoutExpertSource::Counters() const {
  std::map<std::string, uint64_t> sum;
  for (const Member& member : members_) {
    for (const auto& [name, value] : member.source->Counters()) sum[name] += value;
  }
  return sum;
}

std::optional<uint64_t> FanoutExpertSource::ResizeCache(uint64_t bytes) {
  // An equal share each, as sources.cc splits the budget over bank directories;
  // daemons' members keep their own caches and answer nullopt.
  std::optional<uint64_t> total;
  for (Member& member : members_) {
    if (std::optional<uint64_t> capacity = member.source->ResizeCache(bytes / members_.size())) {
      total = total.value_or(0) + *capacity;
    }
  }
  return total;
}

void FanoutExpertSource::CancelSpeculative(uint32_t through_layer) {
  for (Member& member : members_) member.source->CancelSpeculative(through_layer);
}

void FanoutExpertSource::Prefetch(std::span<const ExpertKey> keys, Priority priority) {
  std::vector<std::vector<size_t>> parts = Split(keys);
  for (size_t m = 0; m < members_.size(); ++m) {
    if (parts[m].empty()) continue;
    std::vector<ExpertKey> sub;
    for (size_t i : parts[m]) sub.push_back(keys[i]);
    members_[m].source->Prefetch(sub, priority);
  }
}

}  // namespace warp
