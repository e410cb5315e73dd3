#pragma once

// Python's printing rules, which Jinja2 (the renderer transformers uses, and
// WARP's reference since issue 16) applies to {{ }}, `~`, `|string` and
// `|join`: str() of numbers, True/False/None, repr() of strings inside lists
// and dicts, and json.dumps' float format.
//
// Thread-safe: pure functions.

#include <optional>
#include <string>
#include <string_view>

namespace warp::chat {

// repr(float): shortest round-trip digits, ".0" on integral values, the
// exponent form ("1e+16", "1.5e-07") below 1e-4 and from 1e16; "inf", "nan".
std::string FormatPyFloat(double x);

// str(int) of an integral double: all its digits ("100000000000000000000").
std::string FormatPyInt(double x);

// json.dumps(float): FormatPyFloat, with "Infinity", "-Infinity" and "NaN".
std::string FormatPyJsonFloat(double x);

// repr(str): single quotes unless the string has ' and no ", backslash
// escapes for \\, the quote, \n \r \t, other control characters and the
// non-printable code points (\xNN, \uNNNN); printable non-ASCII stays.
std::string PyRepr(std::string_view s);

// str.isspace() of one code point.
bool IsPyWhitespace(char32_t cp);

// str.strip / lstrip / rstrip: `chars` (its code points) when given, else
// Python's whitespace.
std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right);

// int(s) of a str: Python whitespace around, a sign, decimal digits with
// single underscores between them. nullopt where Python raises ValueError.
std::optional<double> ParsePyInt(std::string_view s);

// float(s) of a str: Python whitespace around, a sign, then a decimal
// literal (digits, ".", an exponent) or inf / infinity / nan in any case.
// nullopt where Python raises ValueError (also for underscores, which
// Python would accept).
std::optional<double> ParsePyFloat(std::string_view s);

}  // namespace warp::chat
