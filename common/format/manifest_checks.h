#pragma once

// The checks a manifest must pass on its own, before any file is opened or
// any table is sized from its counts: extents inside their file or record,
// plain file names, increasing layers, a CRC for every trunk tensor and
// counts below the format's bounds (docs/FORMAT.md#limits). Cross-file
// checks (sizes on disk, footers) are the Container's.
//
// Thread-safe: pure functions.

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "common/format/manifest.h"

namespace warp {

// Bounds far above every release (Kimi K2: 384 experts; the largest record
// tens of MB; trunks of a few hundred GB) that keep every product of counts
// and sizes inside 64 bits and every table sized from them small.
inline constexpr uint32_t kMaxExpertsPerBank = uint32_t{1} << 16;
inline constexpr uint64_t kMaxRecordBytes = uint64_t{1} << 40;  // 1 TiB
inline constexpr uint64_t kMaxTrunkBytes = uint64_t{1} << 50;   // 1 PiB

// Errors name the field: "banks[2]: num_experts 4294967295 is above ...".
absl::Status CheckManifest(const Manifest& manifest);

// InvalidArgument unless `name` is a plain file name: no directory, not "."
// or "..", so that it stays in the container's directory.
absl::Status CheckPlainFileName(const std::string& name, const std::string& where);

}  // namespace warp
