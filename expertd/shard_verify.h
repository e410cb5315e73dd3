#pragma once

// `expertd verify MODEL.warp SHARD_DIR...`: checks a set of shard directories
// against the container they were cut from (docs/FORMAT.md#shards). Beyond
// what `expertd verify` checks in each directory (footers and CRC32C of every
// record, the model's trunk), it checks that every shard belongs to the model
// (fingerprint, bank layout), that the shard maps agree and the set is
// complete, that every expert of every layer is held by a shard (several hold
// a replicated one), and
// that every shard record is byte-identical to the original's. The model and
// the shards are each read once, in large O_DIRECT reads.

#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "expertd/verify.h"

namespace warp::expertd {

// Fails only when the model cannot be opened or is itself a shard, or a read
// fails; everything wrong with the shards (one that cannot be opened included) is a line of the
// report, e.g. "expert 3 of layer 1: differs from the original
// (s1/experts-L1.bin @ 4096)" or "shard 1 of 2 is missing".
absl::StatusOr<VerifyReport> VerifyShardSet(const std::filesystem::path& model,
                                            const std::vector<std::filesystem::path>& shard_dirs,
                                            const VerifyOptions& options);

}  // namespace warp::expertd
