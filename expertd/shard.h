#pragma once

// `expertd shard`: splits the banks of a container across directories (one per
// disk or machine), as docs/FORMAT.md#shards lays out, hot experts spread and
// replicated by measured heat where a usage file is given. Each shard directory is
// a container of its own: the model's manifest with an empty trunk and a
// shard_map, and bank files holding only its experts' records, copied verbatim
// from the original with large O_DIRECT reads and their CRCs re-checked on
// the way, so a corrupt record is never propagated. The original is not changed.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"

namespace warp::expertd {

struct ShardOptions {
  std::vector<double> weights;  // one positive weight per directory; empty: even
  // Weights from each directory's disk, measured (expertd/probe.h) before any
  // record is written: for shards on this machine's disks. Not with `weights`.
  bool probe_weights = false;
  // A usage.warp of this model (computed --learn): hot experts spread evenly
  // and replicated; empty: experts spread by number.
  std::filesystem::path usage_file;
  uint64_t replica_bytes = 0;  // per shard, for replicas of the hottest experts
  bool show_progress = false;
};

struct ShardReport {
  std::vector<ExpertsByLayer> held;  // [shard]: its shard_map.held
  std::vector<uint64_t> records;     // records written to each shard, over all banks
  std::vector<uint64_t> replicated;  // of those, of experts another shard holds too
  std::vector<double> probed;        // with probe_weights: each disk's bytes/s, the weights
  uint64_t bytes_copied = 0;         // bank bytes read from the original
  double seconds = 0;
};

// Shards the container `model` into `dirs` (created if needed; none may hold a
// manifest.json), placed by expertd/placement.h. Errors name what is wrong:
// fewer than 2 dirs, a weight count or value that does not fit, weights both
// given and probed, a disk that cannot be probed, a usage file
// that cannot be read or belongs to another model, replicas without a usage
// file, a target that already holds a container, a
// model that is itself a shard, a corrupt record in the original (DataLoss,
// "expert E of layer L: checksum mismatch (FILE @ OFFSET) ..."). On failure
// the files written so far are removed and no shard has a manifest.
absl::StatusOr<ShardReport> ShardContainer(const std::filesystem::path& model,
                                           const std::vector<std::filesystem::path>& dirs,
                                           const ShardOptions& options);

}  // namespace warp::expertd
