#include "computed/text/utf8.h"

#include "absl/strings/str_cat.h"

namespace warp::text {
namespace {

bool InRange(unsigned char byte, unsigned char low, unsigned char high) {
  return byte >= low && byte <= high;
}

// Number of bytes of the longest prefix at `pos` that could start a valid
// sequence (the "maximal subpart"), and whether it is complete.
struct Subpart {
  size_t length = 0;
  bool complete = false;
};

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

}  // namespace

size_t ValidSequenceLength(std::string_view text, size_t pos) {
  const Subpart part = ScanSequence(text, pos);
  return part.complete ? part.length : 0;
}

absl::Status CheckUtf8(std::string_view text, std::string_view what) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = ValidSequenceLength(text, pos);
    if (length == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(what), ": invalid UTF-8 at byte offset ", pos, " (byte 0x",
                       absl::Hex(static_cast<unsigned char>(text[pos]), absl::kZeroPad2), ")"));
    }
    pos += length;
  }
  return absl::OkStatus();
}

char32_t DecodeCodePoint(std::string_view text, size_t pos, size_t* length) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (lead < 0x80) {
    *length = 1;
    return lead;
  }
  const size_t n = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2;
  char32_t code_point = lead & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    code_point = (code_point << 6) | (static_cast<unsigned char>(text[pos + k]) & 0x3F);
  }
  *length = n;
  return code_point;
}

void AppendCodePoint(char32_t code_point, std::string& out) {
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

std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    const Subpart part = ScanSequence(bytes, pos);
    if (part.complete) {
      out.append(bytes.substr(pos, part.length));
    } else {
      out.append(kReplacementChar);
    }
    pos += part.length;
  }
  return out;
}

}  // namespace warp::text
