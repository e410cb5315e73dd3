#pragma once

// `expertd shard`: splits the banks of a container across directories (one per
// disk or machine), as docs/FORMAT.md#shards lays out. Each shard directory is
// a container of its own: the model's manifest with an empty trunk and a
// shard_map, and bank files holding only its experts' records, copied verbatim
// from the original with large O_DIRECT reads and their CRCs re-checked on
// the way, so a corrupt record is never propagated. The original is not changed.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::expertd {

// Which shard holds each of `num_experts` experts (the same for every layer).
// Without weights, expert e goes to shard e % num_shards. With weights (one per
// shard, all positive), experts are dealt out in increasing order, each to the
// shard whose assigned/weight ratio is lowest, ties to the lower index; equal
// weights give e % num_shards again. REQUIRES: num_shards > 0, weights empty
// or of size num_shards with every weight > 0.
std::vector<uint32_t> AssignExperts(uint32_t num_experts, uint32_t num_shards,
                                    const std::vector<double>& weights);

struct ShardReport {
  std::vector<uint32_t> owner;    // owner[e]: the shard_map.owner every shard got
  std::vector<uint64_t> records;  // records written to each shard, over all banks
  uint64_t bytes_copied = 0;      // bank bytes read from the original (= written)
  double seconds = 0;
};

// Shards the container `model` into `dirs` (created if needed; none may hold a
// manifest.json). `weights` is empty for an even split, else one positive
// weight per directory. Errors name what is wrong: fewer than 2 dirs, a weight
// count or value that does not fit, a target that already holds a container, a
// model that is itself a shard, a corrupt record in the original (DataLoss,
// "expert E of layer L: checksum mismatch (FILE @ OFFSET) ..."). On failure
// the files written so far are removed and no shard has a manifest.
absl::StatusOr<ShardReport> ShardContainer(const std::filesystem::path& model,
                                           const std::vector<std::filesystem::path>& dirs,
                                           const std::vector<double>& weights, bool show_progress);

}  // namespace warp::expertd
