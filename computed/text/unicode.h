#pragma once

// Unicode operations the normalizers and pre-tokenizers need, backed by
// utf8proc: normalization forms, lowercasing, and the character classes Rust's
// `char` methods use in Hugging Face tokenizers (is_whitespace, is_numeric...).
// All functions take and return valid UTF-8.

#include <string>
#include <string_view>

namespace warp::text {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

std::string NormalizeUnicode(std::string_view text, NormalForm form);

// Full lowercase mapping as Rust's str::to_lowercase: U+0130 becomes "i\u0307"
// and a word-final capital sigma becomes U+03C2.
std::string ToLowercase(std::string_view text);

bool IsWhitespace(char32_t code_point);    // Unicode White_Space
bool IsNumeric(char32_t code_point);       // Nd, Nl, No
bool IsAlphanumeric(char32_t code_point);  // L*, N*
bool IsPunctuation(char32_t code_point);   // ASCII punctuation or P*

// Number of bytes of leading / trailing IsWhitespace characters.
size_t LeadingWhitespaceBytes(std::string_view text);
size_t TrailingWhitespaceBytes(std::string_view text);

}  // namespace warp::text
