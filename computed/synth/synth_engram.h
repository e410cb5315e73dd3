#pragma once

// Synth's engram tables (DeepSeek V4.1): each engram layer's table in the
// release's row format (common/format/engram_table.h), written through
// ContainerWriter::BeginEngramTable as the converter writes a release's, a
// 4 KiB record at a time, so memory stays bounded whatever the table's size.
// Rows are seeded random: E4M3 codes of random sign with magnitudes 0.25 to
// 3.75 (never the NaN codes), one UE8M0 scale per 32 of 2^-1, 2^0 or 2^1, so
// a row is zero-centred with about unit spread, like the trunk's fills. Every
// row is a pure function of (seed, layer, row).
//
// Thread-compatible.

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "common/format/container_writer.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Writes every table of EngramTablesOf(config); `progress` hears of each
// record's bytes.
absl::Status WriteSynthEngramTables(ContainerWriter& writer, const ModelConfig& config,
                                    uint64_t seed, const std::function<void(uint64_t)>& progress);

}  // namespace warp::computed
