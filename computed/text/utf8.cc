#include "computed/text/utf8.h"

#include "absl/strings/str_cat.h"
#include "common/utf8.h"

namespace warp::text {

size_t ValidSequenceLength(std::string_view text, size_t pos) {
  const utf8::Subpart part = utf8::ScanSequence(text, pos);
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
  return utf8::DecodeValid(text, pos, length);
}

void AppendCodePoint(char32_t code_point, std::string& out) { utf8::Append(code_point, out); }

std::string Utf8Lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t pos = 0; pos < bytes.size();) {
    const utf8::Subpart part = utf8::ScanSequence(bytes, pos);
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
