#pragma once

// Byte counts as people write them in flags and configs ("20G", "1.5GiB") and
// as we print them in logs and reports ("37.25 GiB"). Owns only the text
// conversion; what a size means (cache budget, record size) is the caller's.
//
// Thread-safe: free functions without shared state.

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warp {

// Parses a non-negative byte count: a decimal number, optionally followed by a
// K, M, G or T suffix, which may carry a trailing "B" or "iB" ("64M", "64MB",
// "64MiB" are the same). Suffixes are case-insensitive and ALWAYS binary:
// 1K = 1024, 1G = 2^30, even when written "GB" -- memory and disk budgets are
// sized in pages and blocks, and a decimal "GB" silently losing 7% of a budget
// is the worse surprise. A bare "B" suffix ("4096B") is accepted, as is
// whitespace around the number and between number and suffix, so FormatBytes()
// output parses back ("1.50 GiB").
//
// A fraction ("1.5G") needs a suffix and is rounded down to a whole byte.
// Returns InvalidArgument quoting `text` for an empty or negative value, an
// unknown suffix, or a result above 2^64 - 1 bytes.
absl::StatusOr<uint64_t> ParseByteSize(std::string_view text);

// Formats `bytes` for people, with binary units: "0 B", "512 B", "4.00 KiB",
// "1.50 GiB", "37.25 GiB". Below 1 KiB the count is exact; above, it is
// rounded to 2 decimals in the largest unit that keeps the value >= 1.
std::string FormatBytes(uint64_t bytes);

}  // namespace warp
