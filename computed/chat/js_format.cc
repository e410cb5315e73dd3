#include "computed/chat/js_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Length of the longest StrDecimalLiteral prefix of `s` ("-1.5e3", "Infinity").
size_t DecimalPrefix(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  if (s.substr(i, 8) == "Infinity") return i + 8;
  const size_t int_start = i;
  while (i < s.size() && IsDigit(s[i])) ++i;
  bool digits = i > int_start;
  if (i < s.size() && s[i] == '.') {
    size_t j = i + 1;
    while (j < s.size() && IsDigit(s[j])) ++j;
    if (digits || j > i + 1) {
      digits = true;
      i = j;
    }
  }
  if (!digits) return 0;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    size_t j = i + 1;
    if (j < s.size() && (s[j] == '+' || s[j] == '-')) ++j;
    const size_t exp_start = j;
    while (j < s.size() && IsDigit(s[j])) ++j;
    if (j > exp_start) i = j;
  }
  return i;
}

double ParseDecimal(std::string_view literal) {
  std::string text(literal);
  size_t sign = (text[0] == '+' || text[0] == '-') ? 1 : 0;
  if (text.compare(sign, 8, "Infinity") == 0) {
    return text[0] == '-' ? -std::numeric_limits<double>::infinity()
                          : std::numeric_limits<double>::infinity();
  }
  return std::strtod(text.c_str(), nullptr);
}

double ParseRadix(std::string_view digits, int radix) {
  if (digits.empty()) return kNaN;
  double value = 0;
  for (char c : digits) {
    int d;
    if (IsDigit(c)) {
      d = c - '0';
    } else if (c >= 'a' && c <= 'z') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'Z') {
      d = c - 'A' + 10;
    } else {
      return kNaN;
    }
    if (d >= radix) return kNaN;
    value = value * radix + d;
  }
  return value;
}

}  // namespace

std::string FormatJsNumber(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x == 0) return "0";
  if (x < 0) return "-" + FormatJsNumber(-x);
  // Shortest round-trip digits d.ddd and exponent, then ECMA-262 Number::toString.
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  const std::string_view sci(buf, result.ptr - buf);
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') digits += c;
  }
  const int exponent = std::atoi(std::string(sci.substr(e_pos + 1)).c_str());
  const int k = static_cast<int>(digits.size());
  const int n = exponent + 1;
  if (k <= n && n <= 21) return digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return "0." + std::string(-n, '0') + digits;
  const int e = n - 1;
  std::string out = digits.substr(0, 1);
  if (k > 1) out += "." + digits.substr(1);
  out += e >= 0 ? "e+" : "e-";
  out += std::to_string(std::abs(e));
  return out;
}

std::string FormatJsFloat(double x) {
  if (x == 0 && std::signbit(x)) return "-0.0";
  if (std::isfinite(x) && std::fmod(x, 1.0) == 0) {
    if (std::fabs(x) >= 1e21) return FormatJsNumber(x);  // toFixed falls back to String(x)
    char buf[400];
    std::snprintf(buf, sizeof(buf), "%.1f", x);  // exact, like toFixed(1)
    return buf;
  }
  return FormatJsNumber(x);
}

std::string FormatJsonNumber(double x) {
  return std::isfinite(x) ? FormatJsNumber(x) : "null";
}

double ParseJsInt(std::string_view s) {
  s = JsTrimStart(s);
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  size_t n = 0;
  while (n < s.size() && IsDigit(s[n])) ++n;
  if (n == 0) return kNaN;
  const double value = std::strtod(std::string(s.substr(0, n)).c_str(), nullptr);
  return negative ? -value : value;
}

double ParseJsFloat(std::string_view s) {
  s = JsTrimStart(s);
  const size_t n = DecimalPrefix(s);
  return n == 0 ? kNaN : ParseDecimal(s.substr(0, n));
}

double JsStringToNumber(std::string_view s) {
  s = JsTrim(s);
  if (s.empty()) return 0;
  if (s.size() > 2 && s[0] == '0') {
    const char r = s[1];
    if (r == 'x' || r == 'X') return ParseRadix(s.substr(2), 16);
    if (r == 'o' || r == 'O') return ParseRadix(s.substr(2), 8);
    if (r == 'b' || r == 'B') return ParseRadix(s.substr(2), 2);
  }
  const size_t n = DecimalPrefix(s);
  return n == s.size() ? ParseDecimal(s) : kNaN;
}

std::string JsonQuote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[16];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace warp::chat
