#pragma once

// usage.warp: how often each expert was routed to, learned by `--learn` and
// used to warm the cache at open. Layout: docs/FORMAT.md#usagewarp.
//
//   +--------------------------------------------+ 0
//   | magic "WXUS" (u32) | version 1 (u32)       |
//   | fingerprint (u64)                          | model the counts belong to
//   | tokens (u64)                               | tokens observed in total
//   | num_entries (u64)                          |
//   +--------------------------------------------+ 32
//   | layer (u32) | expert (u32) | count (u64)   | x num_entries, sorted by
//   +--------------------------------------------+   (layer, expert)
//   | crc32c (u32) of every byte before it       |
//   +--------------------------------------------+

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warp {

inline constexpr std::string_view kUsageFile = "usage.warp";
// "WXUS" (WARP eXpert USage) as a little-endian uint32.
inline constexpr uint32_t kUsageMagic = 0x53555857;
inline constexpr uint32_t kUsageVersion = 1;

struct ExpertUsage {
  uint32_t layer = 0;
  uint32_t expert = 0;
  uint64_t count = 0;  // times the expert was selected
  friend bool operator==(const ExpertUsage&, const ExpertUsage&) = default;
};

// Thread-compatible value type.
struct UsageTable {
  uint64_t fingerprint = 0;
  uint64_t tokens = 0;
  std::vector<ExpertUsage> entries;  // sorted by (layer, expert), unique keys

  // Adds `other`'s tokens and counts into this table, keeping the sort order.
  // REQUIRES: same fingerprint.
  void Merge(const UsageTable& other);

  // Entries by decreasing count (ties: lower layer, then lower expert first).
  std::vector<ExpertUsage> Hottest() const;
};

std::string EncodeUsage(const UsageTable& table);
// Errors are DataLoss naming `source_name`: bad magic, version, size or CRC.
absl::StatusOr<UsageTable> DecodeUsage(std::string_view bytes, std::string_view source_name);

absl::StatusOr<UsageTable> ReadUsageFile(const std::filesystem::path& path);
absl::Status WriteUsageFile(const std::filesystem::path& path, const UsageTable& table);

}  // namespace warp
