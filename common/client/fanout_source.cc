#include "common/client/fanout_source.h"

#include <algorithm>
#include <future>

#include "absl/strings/str_cat.h"
#include "common/client/retry.h"
#include "common/format/engram_table.h"
#include "common/logging.h"

namespace warp {
namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A failure another holder's copy can serve: the daemon is away, or this
// copy is corrupt. A refusal (a bad key, another model) would be the same there.
bool AnotherHolderMayServe(const absl::Status& status) {
  return Retryable(status) || status.code() == absl::StatusCode::kDataLoss;
}

bool Contains(std::span<const uint32_t> members, uint32_t member) {
  return std::find(members.begin(), members.end(), member) != members.end();
}

absl::Status HeldByNoShard(const ExpertKey& key) {
  return absl::NotFoundError(
      absl::StrCat("expert ", key.expert, " of layer ", key.layer, ": held by no shard"));
}

}  // namespace

FanoutExpertSource::FanoutExpertSource(std::vector<Member> members)
    : states_(std::make_unique<MemberState[]>(members.size())), members_(std::move(members)) {}

FanoutExpertSource::~FanoutExpertSource() {
  // Completions the members deliver from here on go straight to the caller.
  stopping_ = true;
}

absl::StatusOr<std::unique_ptr<FanoutExpertSource>> FanoutExpertSource::Create(
    std::vector<Member> members) {
  auto fanout = std::unique_ptr<FanoutExpertSource>(new FanoutExpertSource(std::move(members)));
  for (uint32_t m = 0; m < fanout->members_.size(); ++m) {
    for (const ExpertKey& key : fanout->members_[m].held) {
      Holders& holders = fanout->holders_[key];
      if (Contains(holders, m)) {
        return absl::InvalidArgumentError(absl::StrCat(
            fanout->members_[m].name, " lists expert ", key.expert, " of layer ", key.layer,
            " twice"));
      }
      holders.push_back(m);
    }
    for (uint32_t layer : fanout->members_[m].engram_layers) {
      fanout->engram_holders_[EngramKeyLayer(layer)].push_back(m);
    }
  }
  return fanout;
}

FanoutExpertSource::Holders FanoutExpertSource::HoldersOf(const ExpertKey& key) const {
  if (key.layer >= kEngramKeyBase) {
    // An engram record: spread over the members holding its table by record.
    auto it = engram_holders_.find(key.layer);
    if (it == engram_holders_.end()) return {};
    return {it->second[key.expert % it->second.size()]};
  }
  auto it = holders_.find(key);
  return it == holders_.end() ? Holders() : it->second;
}

std::optional<uint32_t> FanoutExpertSource::Pick(const ExpertKey& key, const Holders& holders,
                                                 const Holders& tried,
                                                 const std::vector<int64_t>& planned,
                                                 bool can_compute) const {
  const int64_t now = NowNs();
  std::optional<uint32_t> best;
  bool best_down = false;
  int64_t best_load = 0;
  // From the key's home holder on: it wins ties, so that an idle set of
  // holders reads (and caches, and is hinted) each expert on one of them.
  const size_t home = holders.empty() ? 0 : HomeIndex(key, holders.size());
  for (size_t j = 0; j < holders.size(); ++j) {
    const uint32_t m = holders[(home + j) % holders.size()];
    if (Contains(tried, m) || (can_compute && members_[m].computer == nullptr)) continue;
    const bool down = states_[m].down_until_ns.load(std::memory_order_relaxed) > now;
    const int64_t load = states_[m].in_flight.load(std::memory_order_relaxed) + planned[m];
    if (!best || (!down && best_down) || (down == best_down && load < best_load)) {
      best = m;
      best_down = down;
      best_load = load;
    }
  }
  return best;
}

void FanoutExpertSource::MarkDown(uint32_t member) {
  const int64_t until = NowNs() + std::chrono::nanoseconds(kDownPause).count();
  if (states_[member].down_until_ns.exchange(until) == 0) {
    Logger("computed.client")
        .warn("{} failed; the experts other stores hold too are read from them (it is tried "
              "again every {} ms)",
              members_[member].name, kDownPause.count());
  }
}

void FanoutExpertSource::MarkUp(uint32_t member) {
  if (states_[member].down_until_ns.load(std::memory_order_relaxed) == 0) return;
  if (states_[member].down_until_ns.exchange(0) != 0) {
    Logger("computed.client").info("{} serves again", members_[member].name);
  }
}

size_t FanoutExpertSource::Eligible(const Holders& holders, bool can_compute) const {
  if (!can_compute) return holders.size();
  return std::count_if(holders.begin(), holders.end(),
                       [&](uint32_t m) { return members_[m].computer != nullptr; });
}

void FanoutExpertSource::Dispatch(std::vector<PendingKey> keys,
                                  const std::shared_ptr<ReadBatch>& whole, Priority priority) {
  // [2 * member + once]: the keys sent to that member, waited for or not.
  std::vector<std::vector<PendingKey>> groups(2 * members_.size());
  std::vector<int64_t> planned(members_.size(), 0);
  for (PendingKey& pending : keys) {
    const Holders holders = HoldersOf(pending.key);
    const std::optional<uint32_t> m = Pick(pending.key, holders, pending.tried, planned, false);
    if (!m) {
      whole->Complete(pending.position, HeldByNoShard(pending.key));
      continue;
    }
    // Without waiting while another holder is left to ask.
    const bool once = Eligible(holders, false) > pending.tried.size() + 1;
    ++planned[*m];
    groups[2 * *m + once].push_back(std::move(pending));
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].empty()) continue;
    const uint32_t m = static_cast<uint32_t>(g / 2);
    std::vector<ExpertKey> sub;
    for (const PendingKey& pending : groups[g]) sub.push_back(pending.key);
    states_[m].in_flight += static_cast<int64_t>(sub.size());
    std::shared_ptr<ReadBatch> part = g % 2 == 1 ? members_[m].source->ReadOnce(sub, priority)
                                                 : members_[m].source->Read(sub, priority);
    part->ForwardTo([this, m, whole, priority, sent = std::move(groups[g])](
                        size_t i, absl::StatusOr<ExpertRecord> record) {
      --states_[m].in_flight;
      if (stopping_) return whole->Complete(sent[i].position, std::move(record));
      if (record.ok()) {
        MarkUp(m);
      } else if (AnotherHolderMayServe(record.status()) &&
                 Eligible(HoldersOf(sent[i].key), false) > sent[i].tried.size() + 1) {
        if (Retryable(record.status())) MarkDown(m);
        ++failovers_;
        PendingKey retry = sent[i];
        retry.tried.push_back(m);
        Dispatch({std::move(retry)}, whole, priority);
        return;
      }
      whole->Complete(sent[i].position, std::move(record));
    });
  }
}

std::shared_ptr<ReadBatch> FanoutExpertSource::Read(std::span<const ExpertKey> keys,
                                                    Priority priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  std::vector<PendingKey> pending(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) pending[i] = {.key = keys[i], .position = i};
  Dispatch(std::move(pending), batch, priority);
  return batch;
}

std::map<std::string, uint64_t> FanoutExpertSource::Counters() const {
  std::map<std::string, uint64_t> sum;
  for (const Member& member : members_) {
    for (const auto& [name, value] : member.source->Counters()) sum[name] += value;
  }
  sum["fanout.failovers"] = failovers_.load();
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
  std::vector<std::vector<ExpertKey>> parts(members_.size());
  std::vector<int64_t> planned(members_.size(), 0);
  for (const ExpertKey& key : keys) {
    if (std::optional<uint32_t> m = Pick(key, HoldersOf(key), {}, planned, false)) {
      ++planned[*m];
      parts[*m].push_back(key);
    }
  }
  for (size_t m = 0; m < members_.size(); ++m) {
    if (!parts[m].empty()) members_[m].source->Prefetch(parts[m], priority);
  }
}

namespace {

// One member's share of a pass: the rows its experts take, renumbered.
struct MemberPass {
  uint32_t member = 0;
  bool once = false;
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

absl::StatusOr<ComputedExperts> FanoutExpertSource::ComputeNow(const ComputePass& pass) {
  ComputedExperts whole;
  whole.outputs.resize(pass.experts.size());
  whole.served.assign(pass.experts.size(), Served::kUnknown);
  std::vector<Holders> tried(pass.experts.size());
  std::vector<size_t> pending(pass.experts.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  // Each round sends the pending experts to a holder each; those a failed
  // holder leaves to another come back for the next round.
  while (!pending.empty()) {
    std::vector<MemberPass> parts(2 * members_.size());
    std::vector<int64_t> planned(members_.size(), 0);
    for (size_t i : pending) {
      const ExpertKey key{pass.layer, pass.experts[i].expert};
      const Holders holders = HoldersOf(key);
      if (holders.empty()) return HeldByNoShard(key);
      const std::optional<uint32_t> m = Pick(key, holders, tried[i], planned, true);
      if (!m) {
        return absl::FailedPreconditionError(
            absl::StrCat(members_[holders[0]].name, " cannot compute experts (layer ", pass.layer,
                         ")"));
      }
      const bool once = Eligible(holders, true) > tried[i].size() + 1;
      ++planned[*m];
      MemberPass& part = parts[2 * *m + once];
      part.member = *m;
      part.once = once;
      part.experts.push_back(i);
    }
    for (MemberPass& part : parts) {
      if (part.experts.empty()) continue;
      TakeRows(pass, part);
      ComputePass sub = pass;
      sub.rows = part.rows;
      sub.experts = part.tasks;
      sub.once = part.once;
      states_[part.member].in_flight += static_cast<int64_t>(part.experts.size());
      part.done = members_[part.member].computer->Compute(sub);
    }
    pending.clear();
    absl::Status failure;
    for (MemberPass& part : parts) {
      if (part.experts.empty()) continue;
      absl::StatusOr<ComputedExperts> computed = part.done.get();
      states_[part.member].in_flight -= static_cast<int64_t>(part.experts.size());
      if (!computed.ok()) {
        if (part.once && AnotherHolderMayServe(computed.status())) {
          if (Retryable(computed.status())) MarkDown(part.member);
          failovers_ += part.experts.size();
          for (size_t i : part.experts) {
            tried[i].push_back(part.member);
            pending.push_back(i);
          }
        } else if (failure.ok()) {
          failure = computed.status();  // after every future is collected
        }
        continue;
      }
      MarkUp(part.member);
      for (size_t j = 0; j < part.experts.size(); ++j) {
        whole.outputs[part.experts[j]] = std::move(computed->outputs[j]);
        whole.served[part.experts[j]] = computed->served[j];
      }
    }
    if (!failure.ok()) return failure;
  }
  return whole;
}

std::future<absl::StatusOr<ComputedExperts>> FanoutExpertSource::Compute(const ComputePass& pass) {
  return std::async(std::launch::async, [this, pass] { return ComputeNow(pass); });
}

}  // namespace warp
