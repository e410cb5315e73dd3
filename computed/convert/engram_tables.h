#pragma once

// The converter's engram step (DeepSeek V4.1): each engram layer's table,
// as the release stores it — `layers.L.engram.embed.weight` F8_E4M3
// [rows, head_dim] and, ~98 GB further on in the shard, `embed.scale`
// F8_E8M0 [rows, head_dim / 32] — repacked into engram-L{layer}.bin, one
// 264-byte row (codes, then scales) next to the other
// (common/format/engram_table.h). Streams a few MiB of each tensor at a
// time, so memory stays bounded whatever the table's size.
//
// Thread-compatible.

#include <functional>

#include "absl/status/status.h"
#include "common/format/container_writer.h"
#include "computed/convert/safetensors.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Checks each engram layer's two tensors (dtypes, shapes, the config's row
// count) and writes its table. `progress` hears of the bytes read.
absl::Status WriteEngramTables(const Checkpoint& checkpoint, const ModelConfig& config,
                               ContainerWriter& writer,
                               const std::function<void(uint64_t bytes)>& progress);

}  // namespace warp::computed
