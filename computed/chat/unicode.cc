#include "computed/chat/unicode.h"

#include <locale.h>
#include <wctype.h>

#include <cmath>
#include <cstdio>

#include "common/utf8.h"

namespace warp::chat {
namespace {

constexpr char32_t kReplacement = utf8::kReplacement;

// glibc's C.UTF-8 carries the full Unicode case tables; the plain "C" locale
// maps ASCII only. Created once, never freed (process lifetime).
locale_t Utf8Locale() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  return locale;
}

char32_t MapCase(char32_t cp, bool upper) {
  if (cp < 0x80) {
    if (upper && cp >= 'a' && cp <= 'z') return cp - 'a' + 'A';
    if (!upper && cp >= 'A' && cp <= 'Z') return cp - 'A' + 'a';
    return cp;
  }
  const locale_t locale = Utf8Locale();
  if (locale == static_cast<locale_t>(0)) return cp;
  const wint_t mapped = upper ? towupper_l(static_cast<wint_t>(cp), locale)
                              : towlower_l(static_cast<wint_t>(cp), locale);
  return static_cast<char32_t>(mapped);
}

std::string MapString(std::string_view s, bool upper) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    char32_t cp;
    pos += DecodeUtf8(s, pos, &cp);
    if (upper && cp == 0xDF) {  // ß has no one-to-one uppercase; JS gives "SS".
      out += "SS";
      continue;
    }
    AppendUtf8(out, MapCase(cp, upper));
  }
  return out;
}

}  // namespace

size_t DecodeUtf8(std::string_view s, size_t pos, char32_t* cp) {
  return utf8::DecodeLenient(s, pos, cp);
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp >= 0xD800 && cp <= 0xDFFF) cp = kReplacement;  // lone surrogates print as U+FFFD
  utf8::Append(cp, out);
}

bool IsJsWhitespace(char32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
    case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
    case 0x205F: case 0x3000: case 0xFEFF:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

size_t JsWhitespaceAt(std::string_view s, size_t pos) {
  if (pos >= s.size()) return 0;
  char32_t cp;
  const size_t len = DecodeUtf8(s, pos, &cp);
  return IsJsWhitespace(cp) ? len : 0;
}

size_t JsWhitespaceBefore(std::string_view s, size_t pos) {
  if (pos == 0) return 0;
  size_t start = pos - 1;
  while (start > 0 && pos - start < 4 && utf8::IsContinuation(s[start])) {
    --start;
  }
  char32_t cp;
  const size_t len = DecodeUtf8(s, start, &cp);
  return start + len == pos && IsJsWhitespace(cp) ? len : 0;
}

std::string_view JsTrimStart(std::string_view s) {
  size_t pos = 0;
  while (size_t len = JsWhitespaceAt(s, pos)) pos += len;
  return s.substr(pos);
}

std::string_view JsTrimEnd(std::string_view s) {
  size_t end = s.size();
  while (size_t len = JsWhitespaceBefore(s, end)) end -= len;
  return s.substr(0, end);
}

size_t Utf16Length(std::string_view s) {
  size_t units = 0;
  for (size_t pos = 0; pos < s.size();) {
    char32_t cp;
    pos += DecodeUtf8(s, pos, &cp);
    units += cp >= 0x10000 ? 2 : 1;
  }
  return units;
}

std::optional<std::string> Utf16At(std::string_view s, double index) {
  const double length = static_cast<double>(Utf16Length(s));
  if (index < 0) index += length;
  if (index < 0 || index >= length || index != std::floor(index)) return std::nullopt;
  size_t unit = 0;
  const auto target = static_cast<size_t>(index);
  for (size_t pos = 0; pos < s.size();) {
    char32_t cp;
    const size_t len = DecodeUtf8(s, pos, &cp);
    const size_t width = cp >= 0x10000 ? 2 : 1;
    if (target < unit + width) {
      if (width == 2) return std::string("\xEF\xBF\xBD");  // half of a surrogate pair
      return std::string(s.substr(pos, len));
    }
    unit += width;
    pos += len;
  }
  return std::nullopt;
}

std::vector<std::string> CodePoints(std::string_view s) {
  std::vector<std::string> out;
  for (size_t pos = 0; pos < s.size();) {
    char32_t cp;
    const size_t len = DecodeUtf8(s, pos, &cp);
    out.emplace_back(s.substr(pos, len));
    pos += len;
  }
  return out;
}

std::string JsToUpper(std::string_view s) { return MapString(s, /*upper=*/true); }
std::string JsToLower(std::string_view s) { return MapString(s, /*upper=*/false); }

std::string EscapeNonAscii(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  char buf[16];
  for (size_t pos = 0; pos < s.size();) {
    char32_t cp;
    const size_t len = DecodeUtf8(s, pos, &cp);
    if (cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp < 0x10000) {
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      const char32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(0xD800 + (v >> 10)));
      out += buf;
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(0xDC00 + (v & 0x3FF)));
      out += buf;
    }
    pos += len;
  }
  return out;
}

}  // namespace warp::chat
