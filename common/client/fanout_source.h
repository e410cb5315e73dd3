#pragma once

// FanoutExpertSource: one ExpertSource over several, each holding part of the
// experts (shards on several disks or daemons). A batch is split by holder,
// the parts are read concurrently, and completions are merged back under the
// caller's indices. A key no member holds is NotFound for that key only.
// Engram records (keys of layer EngramKeyLayer) go to the members that serve
// their table. It is also an ExpertComputer over the members that compute
// (daemons over gRPC): a pass's experts are split by holder, each member is
// sent the rows its experts take, and the outputs come back under the pass's
// indices.
//
// Replicas: a key several members hold goes to the holder with the fewest
// reads (or computed experts) in flight, one not seen failing first, ties
// to its home holder (HomeIndex), so that idle holders split the replicated
// experts between them, each read, hinted and cached on one. It is
// asked without waiting (ReadOnce, ComputePass::once); if it fails as an
// unreachable daemon does, or with a corrupt record, the key goes to the next
// holder at once, and the failed member is passed over for replicated keys
// for kDownPause. A key only one member holds is waited for as before
// (common/client/retry.h). Every member's copy is byte-identical (expertd
// verify checks the set), so the choice never changes a result.
//
// Thread-safe (members are).

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/compute/expert_computer.h"
#include "common/store/expert_source.h"

namespace warp {

// Which of a key's `num_holders` holders is its home: (31 × layer + expert)
// modulo their number, so that consecutive experts alternate.
inline size_t HomeIndex(const ExpertKey& key, size_t num_holders) {
  return (size_t{31} * key.layer + key.expert) % num_holders;
}

class FanoutExpertSource : public ExpertSource, public ExpertComputer {
 public:
  struct Member {
    std::string name;  // for messages: a directory or an address
    std::unique_ptr<ExpertSource> source;
    std::vector<ExpertKey> held;  // the keys this member serves (others may too)
    // The layers whose engram tables it serves (DeepSeek V4.1): each record
    // of a table several members serve goes to one of them, by record index.
    std::vector<uint32_t> engram_layers;
    // The member's Compute (the source itself, for a gRPC daemon); null: it
    // has none, and its experts are computed by another holder or fail.
    ExpertComputer* computer = nullptr;
  };

  // How long a member that failed as unreachable is passed over for the keys
  // another member holds too; then it is tried again (one attempt).
  static constexpr std::chrono::milliseconds kDownPause{2000};

  static absl::StatusOr<std::unique_ptr<FanoutExpertSource>> Create(std::vector<Member> members);
  ~FanoutExpertSource() override;

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  // To the holder a Read would pick now.
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override;
  // Forwarded to every member.
  void CancelSpeculative(uint32_t through_layer) override;
  // Every member's counters, summed, and fanout.failovers: keys and experts
  // sent to another holder after one failed.
  std::map<std::string, uint64_t> Counters() const override;
  // An equal share of `bytes` to each member; the total of those whose caches
  // are in this process, nullopt if none is.
  std::optional<uint64_t> ResizeCache(uint64_t bytes) override;
  // The members' computes, concurrently; a failure no other holder can
  // recover fails the pass.
  std::future<absl::StatusOr<ComputedExperts>> Compute(const ComputePass& pass) override;

 private:
  using Holders = std::vector<uint32_t>;  // member indices, increasing
  // One key of a Read still to be served, and the members that failed it.
  struct PendingKey {
    ExpertKey key;
    size_t position = 0;  // in the caller's batch
    Holders tried;
  };
  struct MemberState {
    std::atomic<int64_t> in_flight{0};      // keys read and experts computed
    std::atomic<int64_t> down_until_ns{0};  // steady clock; 0: served since it last failed
  };

  explicit FanoutExpertSource(std::vector<Member> members);
  // The holders of `key` (engram records: the one serving its record); empty if none.
  Holders HoldersOf(const ExpertKey& key) const;
  // The holder of `key` to ask among `holders` not in `tried`, given
  // `planned` more per member already chosen in this call: one not down
  // first, then the fewest in flight, ties to the key's home holder, then
  // those after it. nullopt if all were tried. `can_compute`: only members
  // that compute.
  std::optional<uint32_t> Pick(const ExpertKey& key, const Holders& holders, const Holders& tried,
                               const std::vector<int64_t>& planned, bool can_compute) const;
  // A failure as unreachable: passed over for replicated keys for kDownPause.
  void MarkDown(uint32_t member);
  // A success: no longer passed over.
  void MarkUp(uint32_t member);
  // How many of `holders` can serve (compute, with `can_compute`).
  size_t Eligible(const Holders& holders, bool can_compute) const;
  // Sends each key to a holder; failures a replica can serve come back here.
  void Dispatch(std::vector<PendingKey> keys, const std::shared_ptr<ReadBatch>& whole,
                Priority priority);
  absl::StatusOr<ComputedExperts> ComputeNow(const ComputePass& pass);

  // Declared before members_, so that completions the members deliver while
  // they are destroyed still find them (with stopping_ set, they only pass
  // each completion on).
  std::unique_ptr<MemberState[]> states_;
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> failovers_{0};
  absl::flat_hash_map<ExpertKey, Holders> holders_;
  absl::flat_hash_map<uint32_t, std::vector<uint32_t>> engram_holders_;  // by key layer
  std::vector<Member> members_;
};

}  // namespace warp
