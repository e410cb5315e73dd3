#pragma once

// `expertd verify`: reads every record of every bank (and every trunk tensor)
// of a container and checks footers and CRC32C, reporting each bad record by
// layer, expert, file and offset. Sequential O_DIRECT reads of many records at
// a time, so it runs at disk speed.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/io/aligned_buffer.h"
#include "common/progress.h"

namespace warp::expertd {

struct VerifyOptions {
  uint64_t read_chunk_bytes = 64 << 20;  // upper bound on one read; whole records
  bool check_trunk = true;
  bool show_progress = false;
};

struct VerifyReport {
  uint64_t records_checked = 0;
  uint64_t trunk_tensors_checked = 0;
  uint64_t bytes_read = 0;
  double seconds = 0;
  // One line per bad record or tensor, e.g. "expert 3 of layer 1: checksum
  // mismatch (m.warp/experts-L1.bin @ 49152)".
  std::vector<std::string> problems;
};

// Checks the CRC32C of every trunk tensor, streaming each sub-tensor through
// `buffer` (4 KiB aligned) with O_DIRECT; bad tensors are added to `report`.
absl::Status VerifyTrunk(const Container& container, AlignedBuffer& buffer, ProgressBar& progress,
                         VerifyReport& report);

// Fails only when the container cannot be opened (missing or truncated files,
// bad manifest); record-level damage is listed in the report.
absl::StatusOr<VerifyReport> VerifyContainer(const std::filesystem::path& dir,
                                             const VerifyOptions& options);

}  // namespace warp::expertd
