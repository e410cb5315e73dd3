#pragma once

// UTF-8 helpers that give strings the JavaScript semantics @huggingface/jinja
// has: its whitespace set (\s, String.prototype.trim), lengths and indices in
// UTF-16 code units, and Unicode case mapping. Strings stay UTF-8 everywhere.
//
// Thread-safe: pure functions.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warp::chat {

// Decodes the code point at `pos` into `*cp` and returns its byte length.
// An invalid byte decodes as U+FFFD of length 1 (common/utf8.h's lenient
// policy, which this is). REQUIRES: pos < s.size().
size_t DecodeUtf8(std::string_view s, size_t pos, char32_t* cp);

// common/utf8.h's encoder, lone surrogates printed as U+FFFD (as node does).
void AppendUtf8(std::string& out, char32_t cp);

// JavaScript's WhiteSpace + LineTerminator set (what \s and trim() match).
bool IsJsWhitespace(char32_t cp);

// Byte length of the whitespace character starting at / ending at `pos`, or 0.
size_t JsWhitespaceAt(std::string_view s, size_t pos);
size_t JsWhitespaceBefore(std::string_view s, size_t pos);

std::string_view JsTrimStart(std::string_view s);
std::string_view JsTrimEnd(std::string_view s);

// String.prototype.length: UTF-16 code units.
size_t Utf16Length(std::string_view s);

// String.prototype.at(index) (negative counts from the end). A lone surrogate
// half (index inside an astral character) comes back as U+FFFD, as node
// prints it. nullopt when out of range.
std::optional<std::string> Utf16At(std::string_view s, double index);

// Array.from(str): the string split into code points.
std::vector<std::string> CodePoints(std::string_view s);

// toUpperCase / toLowerCase with simple (one-to-one) Unicode case mapping,
// plus the common one-to-many ß -> SS. Other special casings are not applied.
std::string JsToUpper(std::string_view s);
std::string JsToLower(std::string_view s);

// JSON-style \uXXXX escaping of every code unit >= 0x7f (ensure_ascii).
std::string EscapeNonAscii(std::string_view s);

}  // namespace warp::chat
