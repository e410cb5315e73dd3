#pragma once

// Number and string formatting with JavaScript's exact rules, which
// @huggingface/jinja inherits: Number.prototype.toString, toFixed(1) for
// integral floats, parseInt/parseFloat, ToNumber(string) for loose ==, and
// JSON.stringify(string).
//
// Thread-safe: pure functions.

#include <string>
#include <string_view>

namespace warp::chat {

// String(x): shortest round-trip digits, "1e+21" style past 21 digits.
std::string FormatJsNumber(double x);

// FloatValue.toString(): integral values keep one decimal ("2.0", "-0.0").
std::string FormatJsFloat(double x);

// JSON.stringify(x) for a number: non-finite values become "null".
std::string FormatJsonNumber(double x);

// parseInt(s, 10) and parseFloat(s); NaN when no digits lead the string.
double ParseJsInt(std::string_view s);
double ParseJsFloat(std::string_view s);

// ToNumber(string) as loose equality applies it ("" -> 0, " 12 " -> 12, "0x1f").
double JsStringToNumber(std::string_view s);

// JSON.stringify(s): quotes, escapes " \ and control characters; non-ASCII stays.
std::string JsonQuote(std::string_view s);

}  // namespace warp::chat
