#include "common/client/fanout_source.h"

#include <future>

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

namespace {

// One member's share of a pass: the rows its experts take, renumbered.
struct MemberPass {
  std::vector<size_t> experts;  // indices in the whole pass
  std::vector<float> rows;
  std::vector<std::vector<uint32_t>> row_lists;
  std::vector<ExpertRowsTask> tasks;
  std::future<absl::StatusOr<ComputedExperts>> done;
};

void TakeRows(const ComputePass& pass, MemberPass& part) {
  const uint64_t num_rows = pass.rows.size() / pass.width;
  std::vector<int64_t> renumbered(num_rows, -1);
  for (size_t i : part.experts) {
    for (uint32_t row : pass.experts[i].rows) renumbered[row] = 0;
  }
  uint32_t next = 0;
  for (uint64_t row = 0; row < num_rows; ++row) {
    if (renumbered[row] < 0) continue;
    renumbered[row] = next++;
    part.rows.insert(part.rows.end(), pass.rows.begin() + row * pass.width,
                     pass.rows.begin() + (row + 1) * pass.width);
  }
  for (size_t i : part.experts) {
    std::vector<uint32_t>& list = part.row_lists.emplace_back();
    for (uint32_t row : pass.experts[i].rows) {
      list.push_back(static_cast<uint32_t>(renumbered[row]));
    }
  }
  for (size_t j = 0; j < part.experts.size(); ++j) {
    part.tasks.push_back(
        {.expert = pass.experts[part.experts[j]].expert, .rows = part.row_lists[j]});
  }
}

}  // namespace

std::future<absl::StatusOr<ComputedExperts>> FanoutExpertSource::Compute(const ComputePass& pass) {
  return std::async(std::launch::async, [this, pass]() -> absl::StatusOr<ComputedExperts> {
    std::vector<MemberPass> parts(members_.size());
    for (size_t i = 0; i < pass.experts.size(); ++i) {
      auto it = owner_.find(ExpertKey{pass.layer, pass.experts[i].expert});
      if (it == owner_.end()) {
        return absl::NotFoundError(absl::StrCat("expert ", pass.experts[i].expert, " of layer ",
                                                pass.layer, ": held by no shard"));
      }
      parts[it->second].experts.push_back(i);
    }
    for (size_t m = 0; m < members_.size(); ++m) {
      MemberPass& part = parts[m];
      if (part.experts.empty()) continue;
      if (members_[m].computer == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat(members_[m].name, " cannot compute experts (layer ", pass.layer, ")"));
      }
      TakeRows(pass, part);
      ComputePass sub = pass;
      sub.rows = part.rows;
      sub.experts = part.tasks;
      part.done = members_[m].computer->Compute(sub);
    }
    ComputedExperts whole;
    whole.outputs.resize(pass.experts.size());
    whole.served.assign(pass.experts.size(), Served::kUnknown);
    for (MemberPass& part : parts) {
      if (part.experts.empty()) continue;
      absl::StatusOr<ComputedExperts> computed = part.done.get();
      if (!computed.ok()) return computed.status();
      for (size_t j = 0; j < part.experts.size(); ++j) {
        whole.outputs[part.experts[j]] = std::move(computed->outputs[j]);
        whole.served[part.experts[j]] = computed->served[j];
      }
    }
    return whole;
  });
}

}  // namespace warp
