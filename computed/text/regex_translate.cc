#include "computed/text/regex_translate.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/utf8.h"

namespace warp::text {
namespace {

constexpr std::string_view kWhiteSpace = "\\p{White_Space}";
constexpr std::string_view kNotWhiteSpace = "\\P{White_Space}";
constexpr std::string_view kHexDigits = "0-9A-Fa-f";

// The Unicode word characters of each engine, as class members.
std::string_view WordMembers(RegexDialect dialect) {
  return dialect == RegexDialect::kOniguruma
             ? "\\p{L}\\p{M}\\p{N}\\p{Pc}"
             : "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}";
}

size_t Utf8Length(char lead) { return utf8::LeadLength(lead); }

// One side of a class intersection: plain members plus nested classes.
struct Operand {
  std::string members;              // PCRE2 class body, without brackets
  std::vector<std::string> nested;  // translated nested classes (atoms)
};

// Thread-compatible: one per TranslateRegex call.
class Translator {
 public:
  Translator(std::string_view pattern, RegexDialect dialect)
      : pattern_(pattern), dialect_(dialect) {}

  absl::StatusOr<std::string> Run() {
    std::string out;
    while (pos_ < pattern_.size()) {
      const char c = pattern_[pos_];
      if (c == '\\') {
        if (absl::Status status = Escape(/*in_class=*/false, out); !status.ok()) return status;
      } else if (c == '[') {
        absl::StatusOr<std::string> atom = Class();
        if (!atom.ok()) return atom.status();
        out += *atom;
      } else {
        CopyChar(out);
      }
    }
    return out;
  }

 private:
  absl::Status Error(std::string_view what, size_t offset) const {
    return absl::InvalidArgumentError(absl::StrCat(
        "regex \"", std::string(pattern_), "\": ", std::string(what), " at offset ", offset));
  }

  bool At(std::string_view text) const { return pattern_.substr(pos_, text.size()) == text; }

  void CopyChar(std::string& out) {
    const size_t length = Utf8Length(pattern_[pos_]);
    out.append(pattern_.substr(pos_, length));
    pos_ += length;
  }

  // Copies "\p{...}" or "\x{...}" (or their one-letter forms) through.
  void CopyBracedEscape(std::string& out) {
    const size_t close = pattern_[pos_ + 2] == '{' ? pattern_.find('}', pos_) : pos_ + 2;
    const size_t end = close == std::string_view::npos ? pattern_.size() : close + 1;
    out.append(pattern_.substr(pos_, end - pos_));
    pos_ = end;
  }

  absl::Status Escape(bool in_class, std::string& out) {
    if (pos_ + 1 >= pattern_.size()) return Error("trailing backslash", pos_);
    const char next = pattern_[pos_ + 1];
    const bool onig = dialect_ == RegexDialect::kOniguruma;
    if ((next == 'p' || next == 'P' || next == 'x') && pos_ + 2 < pattern_.size()) {
      CopyBracedEscape(out);
      return absl::OkStatus();
    }
    std::string replacement;
    if (next == 's') {
      replacement = kWhiteSpace;
    } else if (next == 'S') {
      replacement = kNotWhiteSpace;
    } else if (next == 'w') {
      replacement = in_class ? std::string(WordMembers(dialect_))
                             : absl::StrCat("[", std::string(WordMembers(dialect_)), "]");
    } else if (next == 'W' && !in_class) {
      replacement = absl::StrCat("[^", std::string(WordMembers(dialect_)), "]");
    } else if (next == 'h' && onig) {
      replacement =
          in_class ? std::string(kHexDigits) : absl::StrCat("[", std::string(kHexDigits), "]");
    } else if (next == 'H' && onig && !in_class) {
      replacement = absl::StrCat("[^", std::string(kHexDigits), "]");
    }
    if (!replacement.empty()) {
      out += replacement;
      pos_ += 2;
      return absl::OkStatus();
    }
    out.push_back('\\');
    ++pos_;
    CopyChar(out);
    return absl::OkStatus();
  }

  // At '[': parses through the matching ']' and returns a PCRE2 atom.
  absl::StatusOr<std::string> Class() {
    const size_t start = pos_++;
    const bool negated = pos_ < pattern_.size() && pattern_[pos_] == '^';
    if (negated) ++pos_;
    std::vector<Operand> operands(1);
    bool first = true;
    while (true) {
      if (pos_ >= pattern_.size()) return Error("unterminated character class", start);
      const char c = pattern_[pos_];
      Operand& operand = operands.back();
      if (c == ']' && !first) {
        ++pos_;
        break;
      }
      if (c == ']') {
        operand.members += "\\]";
        ++pos_;
      } else if (At("[:") && pattern_.find(":]", pos_ + 2) != std::string_view::npos) {
        const size_t end = pattern_.find(":]", pos_ + 2) + 2;  // POSIX class, PCRE2 has it
        operand.members.append(pattern_.substr(pos_, end - pos_));
        pos_ = end;
      } else if (c == '[') {
        absl::StatusOr<std::string> nested = Class();
        if (!nested.ok()) return nested.status();
        operand.nested.push_back(*std::move(nested));
      } else if (At("&&")) {
        operands.emplace_back();
        pos_ += 2;
      } else if (c == '\\') {
        if (absl::Status status = Escape(/*in_class=*/true, operand.members); !status.ok()) {
          return status;
        }
      } else if (c == '^') {
        operand.members += "\\^";  // a leading '^' here would negate in PCRE2
        ++pos_;
      } else {
        CopyChar(operand.members);
      }
      first = false;
    }
    return Render(operands, negated, start);
  }

  absl::StatusOr<std::string> Render(const std::vector<Operand>& operands, bool negated,
                                     size_t start) const {
    if (operands.size() == 1 && operands[0].nested.empty()) {
      if (operands[0].members.empty()) return Error("empty character class", start);
      return absl::StrCat("[", negated ? "^" : "", operands[0].members, "]");
    }
    std::vector<std::string> atoms;
    for (const Operand& operand : operands) {
      std::vector<std::string> pieces;
      if (!operand.members.empty()) pieces.push_back(absl::StrCat("[", operand.members, "]"));
      pieces.insert(pieces.end(), operand.nested.begin(), operand.nested.end());
      if (pieces.empty()) return Error("empty operand in character class", start);
      atoms.push_back(pieces.size() == 1 ? pieces[0]
                                         : absl::StrCat("(?:", absl::StrJoin(pieces, "|"), ")"));
    }
    std::string positive = atoms[0];
    if (atoms.size() > 1) {
      std::string lookaheads;
      for (size_t k = 1; k < atoms.size(); ++k) absl::StrAppend(&lookaheads, "(?=", atoms[k], ")");
      positive = absl::StrCat("(?:", lookaheads, atoms[0], ")");
    }
    if (!negated) return positive;
    return absl::StrCat("(?:(?!", positive, ")(?s:.))");
  }

  std::string_view pattern_;
  RegexDialect dialect_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::string> TranslateRegex(std::string_view pattern, RegexDialect dialect) {
  return Translator(pattern, dialect).Run();
}

}  // namespace warp::text
