#include "computed/text/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <vector>

#include "common/check.h"
#include "common/utf8.h"
#include "computed/text/utf8.h"

namespace warp::text {
namespace {

utf8proc_option_t OptionsFor(NormalForm form) {
  switch (form) {
    case NormalForm::kNfc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    case NormalForm::kNfd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE);
    case NormalForm::kNfkc:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case NormalForm::kNfkd:
      return static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
  }
  return UTF8PROC_STABLE;
}

utf8proc_category_t Category(char32_t code_point) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(code_point));
}

bool IsCased(char32_t code_point) {
  const utf8proc_category_t category = Category(code_point);
  return category == UTF8PROC_CATEGORY_LU || category == UTF8PROC_CATEGORY_LL ||
         category == UTF8PROC_CATEGORY_LT;
}

bool IsCaseIgnorable(char32_t code_point) {
  switch (Category(code_point)) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_SK:
      return true;
    default:
      return code_point == '\'' || code_point == '.' || code_point == ':' || code_point == 0xB7 ||
             code_point == 0x2019;
  }
}

// Rust's word-final test for U+03A3: a cased letter before it (skipping
// case-ignorable ones) and none after it.
bool IsFinalSigma(const std::vector<char32_t>& code_points, size_t index) {
  auto cased_before = [&] {
    for (size_t k = index; k-- > 0;) {
      if (!IsCaseIgnorable(code_points[k])) return IsCased(code_points[k]);
    }
    return false;
  };
  auto cased_after = [&] {
    for (size_t k = index + 1; k < code_points.size(); ++k) {
      if (!IsCaseIgnorable(code_points[k])) return IsCased(code_points[k]);
    }
    return false;
  };
  return cased_before() && !cased_after();
}

}  // namespace

std::string NormalizeUnicode(std::string_view text, NormalForm form) {
  if (text.empty()) return {};
  utf8proc_uint8_t* mapped = nullptr;
  const utf8proc_ssize_t length =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &mapped, OptionsFor(form));
  WARP_CHECK(length >= 0);  // the input was validated as UTF-8 by Encode
  std::string out(reinterpret_cast<const char*>(mapped), static_cast<size_t>(length));
  std::free(mapped);
  return out;
}

std::string ToLowercase(std::string_view text) {
  std::vector<char32_t> code_points;
  ForEachCodePoint(text,
                   [&](char32_t code_point, size_t, size_t) { code_points.push_back(code_point); });
  std::string out;
  out.reserve(text.size());
  for (size_t k = 0; k < code_points.size(); ++k) {
    const char32_t code_point = code_points[k];
    if (code_point == 0x130) {  // the one unconditional multi-character mapping
      out.append("i\xCC\x87");
    } else if (code_point == 0x3A3) {
      AppendCodePoint(IsFinalSigma(code_points, k) ? 0x3C2 : 0x3C3, out);
    } else {
      AppendCodePoint(
          static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point))), out);
    }
  }
  return out;
}

bool IsWhitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool IsNumeric(char32_t code_point) {
  const utf8proc_category_t category = Category(code_point);
  return category == UTF8PROC_CATEGORY_ND || category == UTF8PROC_CATEGORY_NL ||
         category == UTF8PROC_CATEGORY_NO;
}

bool IsAlphanumeric(char32_t code_point) {
  switch (Category(code_point)) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return true;
    default:
      return IsNumeric(code_point);
  }
}

bool IsPunctuation(char32_t c) {
  if (c < 0x80) {
    return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
           (c >= 0x7B && c <= 0x7E);
  }
  switch (Category(c)) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

size_t LeadingWhitespaceBytes(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t length = 0;
    if (!IsWhitespace(DecodeCodePoint(text, pos, &length))) break;
    pos += length;
  }
  return pos;
}

size_t TrailingWhitespaceBytes(std::string_view text) {
  size_t end = text.size();
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && utf8::IsContinuation(text[start])) --start;
    size_t length = 0;
    if (!IsWhitespace(DecodeCodePoint(text, start, &length))) break;
    end = start;
  }
  return text.size() - end;
}

}  // namespace warp::text
