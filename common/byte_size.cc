#include "common/byte_size.h"

#include <cstdio>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace warp {
namespace {

constexpr uint64_t kMaxBytes = std::numeric_limits<uint64_t>::max();

// The Debian Abseil build keeps its own absl::string_view (not an alias of
// std::string_view), so the text is converted once and used as that below.
absl::string_view ToAbsl(std::string_view text) { return {text.data(), text.size()}; }

absl::Status SyntaxError(absl::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "invalid size \"", text, "\": expected a number with an optional K, M, G or T suffix"));
}

absl::Status OverflowError(absl::string_view text) {
  return absl::InvalidArgumentError(
      absl::StrCat("invalid size \"", text, "\": larger than 2^64 - 1 bytes"));
}

// Returns the multiplier for `suffix` (already stripped of whitespace), or 0
// if it is not one of "", B, K, KB, KiB, ... T, TB, TiB in any case.
uint64_t SuffixMultiplier(absl::string_view suffix) {
  if (suffix.empty() || absl::EqualsIgnoreCase(suffix, "B")) return 1;
  static constexpr absl::string_view kLetters = "KMGT";
  const size_t letter_idx = kLetters.find(absl::ascii_toupper(suffix[0]));
  if (letter_idx == absl::string_view::npos) return 0;
  const absl::string_view rest = suffix.substr(1);
  if (!rest.empty() && !absl::EqualsIgnoreCase(rest, "B") && !absl::EqualsIgnoreCase(rest, "iB")) {
    return 0;
  }
  return uint64_t{1} << (10 * (letter_idx + 1));
}

// Returns floor(0.<digits> * multiplier) exactly, for any number of digits.
// Folds digits from the last one: x = floor((d * multiplier + x) / 10), which
// equals the floor of the exact value because floor((n + floor(y)) / 10) ==
// floor((n + y) / 10) for integer n. Intermediates stay below 10 * 2^40.
uint64_t FractionBytes(absl::string_view digits, uint64_t multiplier) {
  uint64_t bytes = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    bytes = (static_cast<uint64_t>(*it - '0') * multiplier + bytes) / 10;
  }
  return bytes;
}

size_t CountDigits(absl::string_view text) {
  size_t n = 0;
  while (n < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[n]))) ++n;
  return n;
}

}  // namespace

absl::StatusOr<uint64_t> ParseByteSize(std::string_view std_text) {
  const absl::string_view text = ToAbsl(std_text);
  absl::string_view rest = absl::StripAsciiWhitespace(text);

  const size_t int_digits = CountDigits(rest);
  if (int_digits == 0) return SyntaxError(text);  // also rejects "", "-1", ".5G"
  const absl::string_view int_part = rest.substr(0, int_digits);
  rest.remove_prefix(int_digits);

  absl::string_view frac_part;
  if (!rest.empty() && rest[0] == '.') {
    rest.remove_prefix(1);
    const size_t frac_digits = CountDigits(rest);
    if (frac_digits == 0) return SyntaxError(text);  // "1.G"
    frac_part = rest.substr(0, frac_digits);
    rest.remove_prefix(frac_digits);
  }

  const uint64_t multiplier = SuffixMultiplier(absl::StripLeadingAsciiWhitespace(rest));
  if (multiplier == 0) return SyntaxError(text);
  if (!frac_part.empty() && multiplier == 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid size \"", text, "\": a fractional size needs a K, M, G or T suffix"));
  }

  uint64_t whole = 0;
  for (const char c : int_part) {
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (whole > (kMaxBytes - digit) / 10) return OverflowError(text);
    whole = whole * 10 + digit;
  }
  if (whole > kMaxBytes / multiplier) return OverflowError(text);
  const uint64_t whole_bytes = whole * multiplier;
  const uint64_t frac_bytes = FractionBytes(frac_part, multiplier);
  if (frac_bytes > kMaxBytes - whole_bytes) return OverflowError(text);
  return whole_bytes + frac_bytes;
}

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  // uint64_t tops out just below 16 EiB, so the table ends there.
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr size_t kNumUnits = sizeof(kUnits) / sizeof(kUnits[0]);
  size_t unit_idx = 0;
  double value = static_cast<double>(bytes) / 1024.0;
  // Move up while the value would print as 1024.00 or more ("1023.999 KiB"
  // rounds to "1024.00 KiB", which should read "1.00 MiB").
  while (value >= 1024.0 - 0.005 && unit_idx + 1 < kNumUnits) {
    value /= 1024.0;
    ++unit_idx;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f %s", value, kUnits[unit_idx]);
  return buf;
}

}  // namespace warp
