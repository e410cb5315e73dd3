#pragma once

// FanoutExpertSource: one ExpertSource over several, each holding part of the
// experts (shards on several disks or daemons). A batch is split by owner,
// the parts are read concurrently, and completions are merged back under the
// caller's indices. A key no member holds is NotFound for that key only.
// Engram records (keys of layer EngramKeyLayer) go to the members that serve
// their table. It is also an ExpertComputer over the members that compute
// (daemons over gRPC): a pass's experts are split by owner, each member is
// sent the rows its experts take, and the outputs come back under the pass's
// indices.
//
// Thread-safe (members are).

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/compute/expert_computer.h"
#include "common/store/expert_source.h"

namespace warp {

class FanoutExpertSource : public ExpertSource, public ExpertComputer {
 public:
  struct Member {
    std::string name;  // for messages: a directory or an address
    std::unique_ptr<ExpertSource> source;
    std::vector<ExpertKey> held;  // the keys this member serves
    // The layers whose engram tables it serves (DeepSeek V4.1): each record
    // of a table several members serve goes to one of them, by record index.
    std::vector<uint32_t> engram_layers;
    // The member's Compute (the source itself, for a gRPC daemon); null: it
    // has none, and a pass needing one of its experts fails.
    ExpertComputer* computer = nullptr;
  };

  // Fails if two members claim the same key.
  static absl::StatusOr<std::unique_ptr<FanoutExpertSource>> Create(std::vector<Member> members);

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override;
  // Forwarded to every member.
  void CancelSpeculative(uint32_t through_layer) override;
  // Every member's counters, summed.
  std::map<std::string, uint64_t> Counters() const override;
  // An equal share of `bytes` to each member; the total of those whose caches
  // are in this process, nullopt if none is.
  std::optional<uint64_t> ResizeCache(uint64_t bytes) override;
  // The members' computes, concurrently; the first failure fails the pass.
  std::future<absl::StatusOr<ComputedExperts>> Compute(const ComputePass& pass) override;

 private:
  explicit FanoutExpertSource(std::vector<Member> members) : members_(std::move(members)) {}
  // For each member, the positions in `keys` it serves; unowned positions last.
  std::vector<std::vector<size_t>> Split(std::span<const ExpertKey> keys) const;

  std::vector<Member> members_;
  absl::flat_hash_map<ExpertKey, size_t> owner_;
  absl::flat_hash_map<uint32_t, std::vector<size_t>> engram_holders_;  // by key layer
};

}  // namespace warp
