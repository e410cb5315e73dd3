#include "computed/chat/py_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

// Shortest round-trip digits of x > 0 and n, the position of the decimal
// point (x = 0.digits * 10^n).
void ShortestDigits(double x, std::string* digits, int* n) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), x, std::chars_format::scientific);
  const std::string_view sci(buf, result.ptr - buf);
  const size_t e_pos = sci.find('e');
  digits->clear();
  for (char c : sci.substr(0, e_pos)) {
    if (c != '.') *digits += c;
  }
  *n = std::atoi(std::string(sci.substr(e_pos + 1)).c_str()) + 1;
}

// Python's unicode_repr: what str.isprintable() rejects is escaped. This
// covers the categories chat text meets (Cc, Zs other than space, Zl, Zp,
// the common Cf, private use, noncharacters), not Unicode's unassigned ones.
bool IsPyPrintable(char32_t cp) {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad) return false;
  if (cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f)) return false;
  if ((cp >= 0x205f && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x206f) || cp == 0x3000) return false;
  if (cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) || cp == 0xfffe || cp == 0xffff) return false;
  if (cp == 0x061c || cp == 0x180e || (cp >= 0xe000 && cp <= 0xf8ff) || cp >= 0xf0000) return false;
  if (cp >= 0xd800 && cp <= 0xdfff) return false;
  return true;
}

}  // namespace

std::string FormatPyFloat(double x) {
  if (std::isnan(x)) return "nan";
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  if (x == 0) return std::signbit(x) ? "-0.0" : "0.0";
  if (x < 0) return "-" + FormatPyFloat(-x);
  std::string digits;
  int n = 0;
  ShortestDigits(x, &digits, &n);
  const int k = static_cast<int>(digits.size());
  if (-4 < n && n <= 16) {
    if (n <= 0) return "0." + std::string(-n, '0') + digits;
    if (k <= n) return digits + std::string(n - k, '0') + ".0";
    return digits.substr(0, n) + "." + digits.substr(n);
  }
  const int e = n - 1;
  std::string out = digits.substr(0, 1);
  if (k > 1) out += "." + digits.substr(1);
  char exponent[16];
  std::snprintf(exponent, sizeof(exponent), "e%c%02d", e < 0 ? '-' : '+', std::abs(e));
  return out + exponent;
}

std::string FormatPyInt(double x) {
  if (!std::isfinite(x)) return FormatPyFloat(x);
  if (x == 0) return "0";  // an int has no -0
  char buf[400];
  std::snprintf(buf, sizeof(buf), "%.0f", x);  // exact for an integral double
  return buf;
}

std::string FormatPyJsonFloat(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  return FormatPyFloat(x);
}

std::string PyRepr(std::string_view s) {
  const bool double_quotes = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    if (cp == '\\' || cp == static_cast<char32_t>(quote)) {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!IsPyPrintable(cp)) {
      char buf[16];
      if (cp <= 0xff) {
        std::snprintf(buf, sizeof(buf), "\\x%02x", static_cast<unsigned>(cp));
      } else if (cp <= 0xffff) {
        std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      } else {
        std::snprintf(buf, sizeof(buf), "\\U%08x", static_cast<unsigned>(cp));
      }
      out += buf;
    } else {
      out.append(s.substr(i, len));
    }
    i += len;
  }
  out += quote;
  return out;
}

bool IsPyWhitespace(char32_t cp) {
  return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f || cp == 0x205f ||
         cp == 0x3000;
}

std::string PyStrip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars != nullptr) {
    for (size_t i = 0; i < chars->size();) {
      char32_t cp;
      i += DecodeUtf8(*chars, i, &cp);
      set.push_back(cp);
    }
  }
  auto strippable = [&](char32_t cp) {
    if (chars == nullptr) return IsPyWhitespace(cp);
    for (char32_t c : set) {
      if (c == cp) return true;
    }
    return false;
  };
  std::vector<std::pair<size_t, char32_t>> points;  // byte offset, code point
  for (size_t i = 0; i < s.size();) {
    char32_t cp;
    const size_t len = DecodeUtf8(s, i, &cp);
    points.emplace_back(i, cp);
    i += len;
  }
  size_t begin = 0;
  size_t end = points.size();
  if (left) {
    while (begin < end && strippable(points[begin].second)) ++begin;
  }
  if (right) {
    while (end > begin && strippable(points[end - 1].second)) --end;
  }
  const size_t from = begin < points.size() ? points[begin].first : s.size();
  const size_t to = end < points.size() ? points[end].first : s.size();
  return std::string(s.substr(from, to - from));
}

namespace {

bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

bool EqualsIgnoringCase(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if ((a[i] | 0x20) != lower[i]) return false;
  }
  return true;
}

}  // namespace

std::optional<double> ParsePyInt(std::string_view s) {
  const std::string stripped = PyStrip(s, nullptr, true, true);
  std::string_view rest = stripped;
  const bool negative = !rest.empty() && rest[0] == '-';
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) rest.remove_prefix(1);
  std::string digits;
  for (size_t i = 0; i < rest.size(); ++i) {
    const bool between_digits = rest[i] == '_' && i > 0 && i + 1 < rest.size() && IsAsciiDigit(rest[i - 1]) &&
                                IsAsciiDigit(rest[i + 1]);
    if (between_digits) continue;
    if (!IsAsciiDigit(rest[i])) return std::nullopt;
    digits += rest[i];
  }
  if (digits.empty()) return std::nullopt;
  const double value = std::strtod(digits.c_str(), nullptr);
  return negative ? -value : value;
}

std::optional<double> ParsePyFloat(std::string_view s) {
  const std::string stripped = PyStrip(s, nullptr, true, true);
  std::string_view rest = stripped;
  const bool negative = !rest.empty() && rest[0] == '-';
  if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) rest.remove_prefix(1);
  if (EqualsIgnoringCase(rest, "inf") || EqualsIgnoringCase(rest, "infinity")) {
    return negative ? -HUGE_VAL : HUGE_VAL;
  }
  if (EqualsIgnoringCase(rest, "nan")) return std::nan("");
  size_t i = 0;
  size_t mantissa_digits = 0;
  for (; i < rest.size() && IsAsciiDigit(rest[i]); ++i) ++mantissa_digits;
  if (i < rest.size() && rest[i] == '.') {
    for (++i; i < rest.size() && IsAsciiDigit(rest[i]); ++i) ++mantissa_digits;
  }
  if (mantissa_digits == 0) return std::nullopt;
  if (i < rest.size() && (rest[i] == 'e' || rest[i] == 'E')) {
    ++i;
    if (i < rest.size() && (rest[i] == '+' || rest[i] == '-')) ++i;
    const size_t exponent_start = i;
    while (i < rest.size() && IsAsciiDigit(rest[i])) ++i;
    if (i == exponent_start) return std::nullopt;
  }
  if (i != rest.size()) return std::nullopt;
  const double value = std::strtod(std::string(rest).c_str(), nullptr);
  return negative ? -value : value;
}

}  // namespace warp::chat
