#include "common/utf8.h"

namespace warp::utf8 {
namespace {

bool InRange(unsigned char byte, unsigned char low, unsigned char high) {
  return byte >= low && byte <= high;
}

}  // namespace

Subpart ScanSequence(std::string_view text, size_t pos) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) return {1, true};
  size_t need = 0;
  unsigned char second_low = 0x80, second_high = 0xBF;
  if (InRange(lead, 0xC2, 0xDF)) {
    need = 1;
  } else if (InRange(lead, 0xE0, 0xEF)) {
    need = 2;
    if (lead == 0xE0) second_low = 0xA0;   // overlong
    if (lead == 0xED) second_high = 0x9F;  // surrogates
  } else if (InRange(lead, 0xF0, 0xF4)) {
    need = 3;
    if (lead == 0xF0) second_low = 0x90;   // overlong
    if (lead == 0xF4) second_high = 0x8F;  // > U+10FFFF
  } else {
    return {1, false};
  }
  size_t length = 1;
  for (size_t k = 0; k < need; ++k) {
    if (pos + length >= text.size()) return {length, false};
    const auto byte = static_cast<unsigned char>(text[pos + length]);
    const bool ok = k == 0 ? InRange(byte, second_low, second_high) : InRange(byte, 0x80, 0xBF);
    if (!ok) return {length, false};
    ++length;
  }
  return {length, true};
}

char32_t DecodeValid(std::string_view text, size_t pos, size_t* length) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) {
    *length = 1;
    return lead;
  }
  const size_t n = LeadLength(text[pos]);
  char32_t code_point = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3F);
  }
  *length = n;
  return code_point;
}

size_t DecodeLenient(std::string_view text, size_t pos, char32_t* code_point) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  size_t length = 0;
  char32_t value = 0;
  if (lead < 0x80) {
    *code_point = lead;
    return 1;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    value = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    value = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    value = lead & 0x07;
  } else {
    *code_point = kReplacement;
    return 1;
  }
  if (pos + length > text.size()) {
    *code_point = kReplacement;
    return 1;
  }
  for (size_t i = 1; i < length; ++i) {
    if (!IsContinuation(text[pos + i])) {
      *code_point = kReplacement;
      return 1;
    }
    value = (value << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  }
  *code_point = value;
  return length;
}

void Append(char32_t code_point, std::string& out) {
  if (code_point < 0x80) {
    out.push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (code_point >> 6)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else if (code_point < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (code_point >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (code_point >> 18)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (code_point & 0x3F)));
  }
}

}  // namespace warp::utf8
