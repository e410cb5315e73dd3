#include "computed/chat/lexer.h"

#include "common/status.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/status/status.h"
#include "computed/chat/position.h"
#include "computed/chat/preprocess.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

// Longest-first where prefixes collide ("**" before "*", "//" before "/").
constexpr std::array<std::pair<std::string_view, TokenType>, 29> kOperators = {{
    {"{%", TokenType::kOpenStatement},       {"%}", TokenType::kCloseStatement},
    {"{{", TokenType::kOpenExpression},      {"}}", TokenType::kCloseExpression},
    {"(", TokenType::kOpenParen},            {")", TokenType::kCloseParen},
    {"{", TokenType::kOpenCurlyBracket},     {"}", TokenType::kCloseCurlyBracket},
    {"[", TokenType::kOpenSquareBracket},    {"]", TokenType::kCloseSquareBracket},
    {",", TokenType::kComma},                {".", TokenType::kDot},
    {":", TokenType::kColon},                {"|", TokenType::kPipe},
    {"<=", TokenType::kComparisonOperator},  {">=", TokenType::kComparisonOperator},
    {"==", TokenType::kComparisonOperator},  {"!=", TokenType::kComparisonOperator},
    {"<", TokenType::kComparisonOperator},   {">", TokenType::kComparisonOperator},
    {"+", TokenType::kAdditiveOperator},     {"-", TokenType::kAdditiveOperator},
    {"~", TokenType::kAdditiveOperator},     {"**", TokenType::kPowerOperator},
    {"*", TokenType::kMultiplicativeOperator}, {"//", TokenType::kMultiplicativeOperator},
    {"/", TokenType::kMultiplicativeOperator}, {"%", TokenType::kMultiplicativeOperator},
    {"=", TokenType::kEquals},
}};

bool IsDigit(int c) { return c >= '0' && c <= '9'; }
bool IsWord(int c) {
  return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
int HexValue(char c) {
  if (IsDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
 public:
  Lexer(std::string_view source, Preprocessed pre)
      : lines_(source), pre_(std::move(pre)), src_(pre_.text) {}

  absl::StatusOr<std::vector<Token>> Run();

 private:
  int At(size_t i) const { return i < src_.size() ? static_cast<unsigned char>(src_[i]) : -1; }
  bool StartsWith(std::string_view s) const { return src_.substr(pos_, s.size()) == s; }
  TokenType LastType() const { return tokens_.empty() ? TokenType::kEndOfInput : tokens_.back().type; }
  void Push(TokenType type, std::string value, size_t at) {
    tokens_.push_back(Token{type, std::move(value), pre_.origin[at]});
  }
  absl::Status Error(size_t at, std::string_view message) const {
    return ErrorAt(absl::StatusCode::kInvalidArgument, lines_.At(pre_.origin[std::min(at, src_.size())]),
                   message);
  }
  absl::Status EndOfInput() const { return Error(src_.size(), "unexpected end of template inside a tag"); }

  bool LexText();
  absl::Status LexComment();
  void StripTrailingWhitespace();
  void SkipLeadingWhitespace() {
    while (size_t len = JsWhitespaceAt(src_, pos_)) pos_ += len;
  }
  absl::Status SkipTagWhitespace();
  absl::StatusOr<std::string> Digits();
  // Appends a fraction (".5") and an exponent ("e-3") that follow `num`'s digits.
  absl::Status FractionAndExponent(std::string& num);
  absl::StatusOr<bool> LexSign();
  bool LexOperator();
  absl::Status LexString();
  absl::Status LexEscape(std::string& out);
  absl::Status LexNumber();
  absl::Status LexWord();

  LineIndex lines_;
  Preprocessed pre_;
  std::string_view src_;
  size_t pos_ = 0;
  int curly_depth_ = 0;  // inside {{ {...} }}, "}}" closes the object, not the tag
  std::vector<Token> tokens_;
};

// Text runs until "{%", "{{" or "{#". Returns true if it pushed a token.
bool Lexer::LexText() {
  const size_t start = pos_;
  while (pos_ < src_.size() &&
         !(src_[pos_] == '{' && (At(pos_ + 1) == '%' || At(pos_ + 1) == '{' || At(pos_ + 1) == '#'))) {
    ++pos_;
  }
  if (pos_ == start) return false;
  Push(TokenType::kText, std::string(src_.substr(start, pos_ - start)), start);
  return true;
}

absl::Status Lexer::LexComment() {
  const size_t start = pos_;
  pos_ += 2;
  const bool strip_before = At(pos_) == '-';
  if (strip_before) ++pos_;
  std::string comment;
  while (At(pos_) != '#' || At(pos_ + 1) != '}') {
    if (pos_ + 2 >= src_.size()) return Error(start, "unterminated comment: missing #}");
    comment += src_[pos_++];
  }
  const bool strip_after = !comment.empty() && comment.back() == '-';
  if (strip_after) comment.pop_back();
  if (strip_before) StripTrailingWhitespace();
  Push(TokenType::kComment, std::move(comment), start);
  pos_ += 2;
  if (strip_after) SkipLeadingWhitespace();
  return absl::OkStatus();
}

void Lexer::StripTrailingWhitespace() {
  if (tokens_.empty() || tokens_.back().type != TokenType::kText) return;
  std::string& text = tokens_.back().value;
  text.resize(JsTrimEnd(text).size());
  if (text.empty()) tokens_.pop_back();
}

absl::Status Lexer::SkipTagWhitespace() {
  while (size_t len = JsWhitespaceAt(src_, pos_)) {
    pos_ += len;
    if (pos_ >= src_.size()) return EndOfInput();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Lexer::Digits() {
  std::string digits;
  while (IsDigit(At(pos_))) {
    digits += src_[pos_++];
    if (pos_ >= src_.size()) return EndOfInput();
  }
  return digits;
}

// A "+" or "-" is a sign (unary, or part of a number literal) unless it
// follows an operand. Returns true if it consumed the sign.
absl::StatusOr<bool> Lexer::LexSign() {
  const char sign = src_[pos_];
  switch (LastType()) {
    case TokenType::kText:
    case TokenType::kEndOfInput:
      return Error(pos_, Cat("unexpected character '", std::string(1, sign), "'"));
    case TokenType::kIdentifier:
    case TokenType::kNumericLiteral:
    case TokenType::kStringLiteral:
    case TokenType::kCloseParen:
    case TokenType::kCloseSquareBracket:
      return false;  // a binary operator
    default:
      break;
  }
  const size_t start = pos_++;
  auto num = Digits();
  if (!num.ok()) return num.status();
  if (!num->empty()) {
    WARP_RETURN_IF_ERROR(FractionAndExponent(*num));
  }
  Push(num->empty() ? TokenType::kUnaryOperator : TokenType::kNumericLiteral,
       std::string(1, sign) + *num, start);
  return true;
}

bool Lexer::LexOperator() {
  for (const auto& [seq, type] : kOperators) {
    if (seq == "}}" && curly_depth_ > 0) continue;
    if (!StartsWith(seq)) continue;
    Push(type, std::string(seq), pos_);
    if (type == TokenType::kOpenExpression) curly_depth_ = 0;
    if (type == TokenType::kOpenCurlyBracket) ++curly_depth_;
    if (type == TokenType::kCloseCurlyBracket) --curly_depth_;
    pos_ += seq.size();
    return true;
  }
  return false;
}

absl::Status Lexer::LexEscape(std::string& out) {
  const size_t start = pos_++;
  if (pos_ >= src_.size()) return EndOfInput();
  const char c = src_[pos_++];
  if (c == 'x' || c == 'u') {
    const size_t len = c == 'x' ? 2 : 4;
    char32_t unit = 0;
    for (size_t i = 0; i < len; ++i) {
      const int h = pos_ + i < src_.size() ? HexValue(src_[pos_ + i]) : -1;
      if (h < 0) return Error(start, "invalid hexadecimal escape sequence in a string literal");
      unit = unit * 16 + static_cast<char32_t>(h);
    }
    pos_ += len;
    // A \uD8xx\uDCxx pair spells one astral character.
    if (unit >= 0xD800 && unit <= 0xDBFF && src_.substr(pos_, 2) == "\\u") {
      char32_t low = 0;
      bool ok = pos_ + 6 <= src_.size();
      for (size_t i = 2; ok && i < 6; ++i) {
        const int h = HexValue(src_[pos_ + i]);
        ok = h >= 0;
        low = low * 16 + static_cast<char32_t>(h);
      }
      if (ok && low >= 0xDC00 && low <= 0xDFFF) {
        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
        pos_ += 6;
      }
    }
    AppendUtf8(out, unit);
    return absl::OkStatus();
  }
  static constexpr std::string_view kFrom = "ntrbfv'\"\\";
  static constexpr std::string_view kTo = "\n\t\r\b\f\v'\"\\";
  const size_t k = kFrom.find(c);
  if (k == std::string_view::npos) {
    return Error(start, Cat("unknown escape sequence '\\", std::string(1, c), "' in a string literal"));
  }
  out += kTo[k];
  return absl::OkStatus();
}

absl::Status Lexer::LexString() {
  const size_t start = pos_;
  const char quote = src_[pos_++];
  std::string value;
  while (true) {
    if (pos_ >= src_.size()) return Error(start, "unterminated string literal");
    if (src_[pos_] == quote) break;
    if (src_[pos_] == '\\') {
      if (absl::Status s = LexEscape(value); !s.ok()) return s;
      continue;
    }
    value += src_[pos_++];
  }
  ++pos_;  // closing quote
  Push(TokenType::kStringLiteral, std::move(value), start);
  return absl::OkStatus();
}

absl::Status Lexer::LexNumber() {
  const size_t start = pos_;
  auto num = Digits();
  if (!num.ok()) return num.status();
  if (LastType() != TokenType::kDot) WARP_RETURN_IF_ERROR(FractionAndExponent(*num));
  Push(TokenType::kNumericLiteral, *std::move(num), start);
  return absl::OkStatus();
}

absl::Status Lexer::FractionAndExponent(std::string& num) {
  if (At(pos_) == '.' && IsDigit(At(pos_ + 1))) {
    ++pos_;
    auto frac = Digits();
    if (!frac.ok()) return frac.status();
    num += "." + *frac;
  }
  // Jinja2's float literals also take an exponent: 1e20, 2.5E-3.
  const int e = At(pos_);
  const size_t sign = (At(pos_ + 1) == '+' || At(pos_ + 1) == '-') ? 1 : 0;
  if ((e == 'e' || e == 'E') && IsDigit(At(pos_ + 1 + sign))) {
    num += 'e';
    if (sign) num += src_[pos_ + 1];
    pos_ += 1 + sign;
    auto exponent = Digits();
    if (!exponent.ok()) return exponent.status();
    num += *exponent;
  }
  return absl::OkStatus();
}

absl::Status Lexer::LexWord() {
  const size_t start = pos_;
  while (IsWord(At(pos_))) {
    if (++pos_ >= src_.size()) return EndOfInput();
  }
  Push(TokenType::kIdentifier, std::string(src_.substr(start, pos_ - start)), start);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Token>> Lexer::Run() {
  while (pos_ < src_.size()) {
    const TokenType last = LastType();
    if (last == TokenType::kEndOfInput || last == TokenType::kCloseStatement ||
        last == TokenType::kCloseExpression || last == TokenType::kComment) {
      if (LexText()) continue;
    }
    if (StartsWith("{#")) {
      if (absl::Status s = LexComment(); !s.ok()) return s;
      continue;
    }
    if (StartsWith("{%-") || StartsWith("{{-")) {
      StripTrailingWhitespace();
      const bool statement = src_[pos_ + 1] == '%';
      Push(statement ? TokenType::kOpenStatement : TokenType::kOpenExpression, statement ? "{%" : "{{", pos_);
      if (!statement) curly_depth_ = 0;
      pos_ += 3;
      continue;
    }
    if (absl::Status s = SkipTagWhitespace(); !s.ok()) return s;
    if (StartsWith("-%}") || StartsWith("-}}")) {
      const bool statement = src_[pos_ + 1] == '%';
      Push(statement ? TokenType::kCloseStatement : TokenType::kCloseExpression, statement ? "%}" : "}}", pos_);
      pos_ += 3;
      SkipLeadingWhitespace();
      continue;
    }
    const int c = At(pos_);
    if (c == '-' || c == '+') {
      auto consumed = LexSign();
      if (!consumed.ok()) return consumed.status();
      if (*consumed) continue;
    }
    if (LexOperator()) continue;
    absl::Status s = absl::OkStatus();
    if (c == '\'' || c == '"') {
      s = LexString();
    } else if (IsDigit(c)) {
      s = LexNumber();
    } else if (IsWord(c)) {
      s = LexWord();
    } else {
      char32_t cp;
      const size_t len = DecodeUtf8(src_, pos_, &cp);
      return Error(pos_, Cat("unexpected character '", std::string(src_.substr(pos_, len)), "'"));
    }
    if (!s.ok()) return s;
  }
  return std::move(tokens_);
}

}  // namespace

std::string_view TokenTypeName(TokenType type) {
  switch (type) {
    case TokenType::kText: return "text";
    case TokenType::kNumericLiteral: return "number";
    case TokenType::kStringLiteral: return "string";
    case TokenType::kIdentifier: return "name";
    case TokenType::kEquals: return "'='";
    case TokenType::kOpenParen: return "'('";
    case TokenType::kCloseParen: return "')'";
    case TokenType::kOpenStatement: return "'{%'";
    case TokenType::kCloseStatement: return "'%}'";
    case TokenType::kOpenExpression: return "'{{'";
    case TokenType::kCloseExpression: return "'}}'";
    case TokenType::kOpenSquareBracket: return "'['";
    case TokenType::kCloseSquareBracket: return "']'";
    case TokenType::kOpenCurlyBracket: return "'{'";
    case TokenType::kCloseCurlyBracket: return "'}'";
    case TokenType::kComma: return "','";
    case TokenType::kDot: return "'.'";
    case TokenType::kColon: return "':'";
    case TokenType::kPipe: return "'|'";
    case TokenType::kAdditiveOperator:
    case TokenType::kMultiplicativeOperator:
    case TokenType::kPowerOperator:
    case TokenType::kComparisonOperator: return "operator";
    case TokenType::kUnaryOperator: return "sign";
    case TokenType::kComment: return "comment";
    case TokenType::kEndOfInput: return "end of template";
  }
  return "?";
}

absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source) {
  return Lexer(source, Preprocess(source)).Run();
}

}  // namespace warp::chat
