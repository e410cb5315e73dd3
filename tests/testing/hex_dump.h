#pragma once

// `hexdump -C` style dumps, the form docs/FORMAT.md shows files in.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace warp::testing {

// 16 bytes a line: 8-digit hex offset (starting at `base_offset`), the bytes
// in two groups of 8, and the printable ASCII between bars. A run of lines
// equal to the one before is replaced by one "*" line; the last line is the
// end offset.
std::string HexDump(std::span<const std::byte> bytes, uint64_t base_offset);

}  // namespace warp::testing
