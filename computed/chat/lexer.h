#pragma once

// Tokenizer for the Jinja subset of chat templates, a port of
// @huggingface/jinja's lexer (the reference renderer) so that whitespace
// comes out byte-identical. Before tokenizing, the source is preprocessed as
// the reference does it (and as transformers configures Jinja):
//   1. one trailing "\n" of the template is dropped;
//   2. lstrip_blocks: spaces/tabs from a line start to "{%", "{#" (and "{-") go;
//   3. trim_blocks: the "\n" right after "%}", "#}" (and "-}") goes;
//   4. transformers' {% generation %} / {% endgeneration %} tags are removed,
//      with the whitespace their "-" markers ask to strip.
// "{%-", "-%}", "{{-", "-}}", "{#-", "-#}" then strip whitespace (JavaScript's
// \s set, which includes NBSP and U+2028) on that side.
//
// Thread-safe: pure function.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::chat {

enum class TokenType {
  kText,                 // template text outside tags
  kNumericLiteral,       // 123, 1.5, -1 (a sign right after an operator is part of it)
  kStringLiteral,        // 'a' "b" (escapes already decoded)
  kIdentifier,           // names, keywords, true/false/none
  kEquals,               // =
  kOpenParen,            // (
  kCloseParen,           // )
  kOpenStatement,        // {%
  kCloseStatement,       // %}
  kOpenExpression,       // {{
  kCloseExpression,      // }}
  kOpenSquareBracket,    // [
  kCloseSquareBracket,   // ]
  kOpenCurlyBracket,     // {
  kCloseCurlyBracket,    // }
  kComma,                // ,
  kDot,                  // .
  kColon,                // :
  kPipe,                 // |
  kAdditiveOperator,     // + - ~
  kMultiplicativeOperator,  // * / // %
  kPowerOperator,        // **
  kComparisonOperator,   // < > <= >= == !=
  kUnaryOperator,        // a sign that is not part of a number
  kComment,              // {# ... #}
  kEndOfInput,           // sentinel the parser sees past the last token
};

std::string_view TokenTypeName(TokenType type);

struct Token {
  TokenType type;
  std::string value;
  size_t offset = 0;  // byte offset of the token in the original source
};

// Errors name the line and column ("line 2, column 7: unterminated string literal").
absl::StatusOr<std::vector<Token>> Tokenize(std::string_view source);

}  // namespace warp::chat
