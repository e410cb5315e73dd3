#include "tests/testing/hex_dump.h"

#include <cstdio>

namespace warp::testing {

std::string HexDump(std::span<const std::byte> bytes, uint64_t base_offset) {
  std::string out;
  std::span<const std::byte> previous;
  bool in_repeat = false;
  char buf[16];
  for (size_t line = 0; line < bytes.size(); line += 16) {
    std::span<const std::byte> row = bytes.subspan(line, std::min<size_t>(16, bytes.size() - line));
    if (!previous.empty() && row.size() == 16 &&
        std::equal(row.begin(), row.end(), previous.begin(), previous.end())) {
      if (!in_repeat) out += "*\n";
      in_repeat = true;
      continue;
    }
    in_repeat = false;
    previous = row;
    std::snprintf(buf, sizeof(buf), "%08llx ", static_cast<unsigned long long>(base_offset + line));
    out += buf;
    std::string ascii;
    for (size_t i = 0; i < 16; ++i) {
      if (i == 8) out += " ";
      if (i < row.size()) {
        const unsigned char c = static_cast<unsigned char>(row[i]);
        std::snprintf(buf, sizeof(buf), " %02x", c);
        out += buf;
        ascii += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
      } else {
        out += "   ";
      }
    }
    out += "  |" + ascii + "|\n";
  }
  std::snprintf(buf, sizeof(buf), "%08llx\n",
                static_cast<unsigned long long>(base_offset + bytes.size()));
  out += buf;
  return out;
}

}  // namespace warp::testing
