#include "computed/text/byte_level.h"

#include <array>

#include "computed/text/utf8.h"

namespace warp::text {
namespace {

constexpr char32_t kLastMappedChar = 0x143;

struct Tables {
  std::array<std::string, 256> byte_to_chars;
  std::array<int16_t, kLastMappedChar + 1> char_to_byte;
};

bool StandsForItself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

Tables BuildTables() {
  Tables tables;
  tables.char_to_byte.fill(-1);
  char32_t next_shifted = 0x100;
  for (int byte = 0; byte < 256; ++byte) {
    const char32_t code_point = StandsForItself(byte) ? byte : next_shifted++;
    AppendCodePoint(code_point, tables.byte_to_chars[byte]);
    tables.char_to_byte[code_point] = static_cast<int16_t>(byte);
  }
  return tables;
}

const Tables& GetTables() {
  static const Tables* const tables = new Tables(BuildTables());
  return *tables;
}

}  // namespace

std::string BytesToChars(std::string_view bytes) {
  const Tables& tables = GetTables();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (const char byte : bytes) out += tables.byte_to_chars[static_cast<unsigned char>(byte)];
  return out;
}

int CharToByte(char32_t code_point) {
  if (code_point > kLastMappedChar) return -1;
  return GetTables().char_to_byte[code_point];
}

}  // namespace warp::text
