#pragma once

// Where `expertd shard` puts each expert (docs/FORMAT.md#shards): which
// shards hold it, per layer. Pure functions of the banks, the shard weights
// and the measured heat (usage.warp); `expertd shard` copies the records
// accordingly.

#include <cstdint>
#include <vector>

#include "common/format/manifest.h"
#include "common/format/usage_file.h"

namespace warp::expertd {

// Which shard holds each of `num_experts` experts (the same for every layer).
// Without weights, expert e goes to shard e % num_shards. With weights (one per
// shard, all positive), experts are dealt out in increasing order, each to the
// shard whose assigned/weight ratio is lowest, ties to the lower index; equal
// weights give e % num_shards again. REQUIRES: num_shards > 0, weights empty
// or of size num_shards with every weight > 0.
std::vector<uint32_t> AssignExperts(uint32_t num_experts, uint32_t num_shards,
                                    const std::vector<double>& weights);

struct PlacementOptions {
  std::vector<double> weights;  // one positive weight per shard; empty: equal
  // Measured heat (its fingerprint the model's); null: experts are spread by
  // number alone, as AssignExperts deals them.
  const UsageTable* usage = nullptr;
  // Bytes each shard may spend on copies of experts another shard holds: the
  // hottest experts (by `usage`) get a replica each, while a shard has room.
  uint64_t replica_bytes = 0;
};

// held[s]: the experts shard s holds, by layer (every bank's layer listed).
// Each shard holds as many experts of a layer as AssignExperts gives it; with
// `usage`, which ones is chosen per layer, hottest first, each to the shard of
// the least heat per weight so far that has room (ties to the lower index),
// so hot experts spread evenly. Then replicas: the hottest experts (count > 0)
// in decreasing order, each to the shard not yet holding it whose share of
// that layer's heat per weight is lowest among those with replica room (heat
// is shared evenly among an expert's holders). REQUIRES: num_shards > 0,
// weights as AssignExperts; replica_bytes > 0 only with usage.
std::vector<ExpertsByLayer> PlaceExperts(const std::vector<BankEntry>& banks, uint32_t num_shards,
                                         const PlacementOptions& options);

}  // namespace warp::expertd
