#pragma once

// UTF-8 primitives for the tokenizers: validation that names the offending
// byte, code point iteration, and lossy conversion (invalid sequences become
// U+FFFD by maximal subpart, as Rust's from_utf8_lossy and WHATWG do). The
// codec itself is common/utf8.h's strict policy, shared with computed/chat.

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "common/utf8.h"

namespace warp::text {

inline constexpr std::string_view kReplacementChar = utf8::kReplacementBytes;  // U+FFFD

// Length of the valid UTF-8 sequence at `text[pos]`, or 0 if the bytes there
// are not one (overlong, surrogate, truncated, > U+10FFFF, stray byte).
size_t ValidSequenceLength(std::string_view text, size_t pos);

// InvalidArgument naming the byte offset of the first invalid sequence.
absl::Status CheckUtf8(std::string_view text, std::string_view what);

// REQUIRES: `text` is valid UTF-8 and pos < text.size().
char32_t DecodeCodePoint(std::string_view text, size_t pos, size_t* length);

void AppendCodePoint(char32_t code_point, std::string& out);

// `bytes` with each invalid maximal subpart replaced by U+FFFD.
std::string Utf8Lossy(std::string_view bytes);

// Calls `fn(code_point, byte_offset, byte_length)` for each code point of
// valid UTF-8 `text`.
template <typename Fn>
void ForEachCodePoint(std::string_view text, Fn&& fn) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t length = 0;
    const char32_t code_point = DecodeCodePoint(text, pos, &length);
    fn(code_point, pos, length);
    pos += length;
  }
}

}  // namespace warp::text
