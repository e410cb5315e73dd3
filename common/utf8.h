#pragma once

// The one UTF-8 codec: what the tokenizers (computed/text) and the chat
// templates (computed/chat) decode and encode with. Two decoding policies,
// because their specifications differ in how they treat bad bytes:
// - strict (Unicode / Rust from_utf8_lossy / WHATWG): a sequence is valid only
//   if it is shortest-form, not a surrogate and <= U+10FFFF; an invalid one is
//   replaced, when asked, by one U+FFFD per maximal subpart;
// - lenient (what @huggingface/jinja's JavaScript strings see): any lead byte
//   with enough continuation bytes decodes as written; a stray byte, or a
//   lead byte without its continuations, is one U+FFFD of one byte.
//
// Thread-safe: pure functions.

#include <cstddef>
#include <string>
#include <string_view>

namespace warp::utf8 {

inline constexpr char32_t kReplacement = 0xFFFD;
inline constexpr std::string_view kReplacementBytes = "\xEF\xBF\xBD";  // U+FFFD

inline bool IsContinuation(char byte) { return (static_cast<unsigned char>(byte) & 0xC0) == 0x80; }

// Byte length a sequence starting with `lead` claims (1 for ASCII and stray bytes).
inline size_t LeadLength(char lead) {
  const auto byte = static_cast<unsigned char>(lead);
  return byte >= 0xF0 ? 4 : byte >= 0xE0 ? 3 : byte >= 0xC0 ? 2 : 1;
}

// Strict: the longest prefix at `text[pos]` that could start a valid sequence
// (the maximal subpart, at least one byte), and whether it is one.
// REQUIRES: pos < text.size().
struct Subpart {
  size_t length = 0;
  bool complete = false;
};
Subpart ScanSequence(std::string_view text, size_t pos);

// Strict: the code point of the valid sequence at `pos` and its length.
// REQUIRES: the bytes at `pos` are a valid sequence.
char32_t DecodeValid(std::string_view text, size_t pos, size_t* length);

// Lenient: decodes the code point at `pos` into `*code_point`; returns its
// byte length. REQUIRES: pos < text.size().
size_t DecodeLenient(std::string_view text, size_t pos, char32_t* code_point);

// Appends the encoding of `code_point` as is (surrogates included).
// REQUIRES: code_point <= U+10FFFF.
void Append(char32_t code_point, std::string& out);

}  // namespace warp::utf8
