#pragma once

// Number and string formatting with JavaScript's exact rules, which
// @huggingface/jinja inherits: Number.prototype.toString, parseInt, and
// JSON.stringify(string).
//
// Thread-safe: pure functions.

#include <string>
#include <string_view>

namespace warp::chat {

// String(x): shortest round-trip digits, "1e+21" style past 21 digits.
std::string FormatJsNumber(double x);

// parseInt(s, 10); NaN when no digits lead the string.
double ParseJsInt(std::string_view s);

// JSON.stringify(s): quotes, escapes " \ and control characters; non-ASCII stays.
std::string JsonQuote(std::string_view s);

}  // namespace warp::chat
