#pragma once

// The Parser class behind ParseTemplate, split over parser.cc (statements)
// and parse_expression.cc (expressions). Not part of the public API.
//
// Thread-compatible: one Parser per parse.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/chat/ast.h"
#include "computed/chat/lexer.h"
#include "computed/chat/position.h"

namespace warp::chat {

class Parser {
 public:
  Parser(std::string_view source, std::vector<Token> tokens)
      : lines_(source), tokens_(std::move(tokens)) {}

  absl::StatusOr<NodeList> ParseAll();

 private:
  friend class DepthGuard;

  // --- Token access (parser.cc).
  const Token& Peek(size_t ahead = 0) const;
  bool Is(TokenType type, size_t ahead = 0) const { return Peek(ahead).type == type; }
  bool IsIdentifier(std::string_view name, size_t ahead = 0) const {
    return Is(TokenType::kIdentifier, ahead) && Peek(ahead).value == name;
  }
  // {% name ... where name is one of `names`.
  bool IsStatement(std::initializer_list<std::string_view> names) const;
  SourcePos PosOf(const Token& token) const { return lines_.At(token.offset); }
  SourcePos Here() const { return PosOf(Peek()); }
  absl::Status Expect(TokenType type, std::string_view what);
  absl::Status ExpectEndTag(std::string_view name, const Token& opener);
  absl::Status SyntaxError(std::string_view message) const;
  absl::Status Unsupported(SourcePos pos, std::string_view feature) const;
  absl::Status EnterNesting();

  // --- Statements (parser.cc).
  absl::StatusOr<NodePtr> ParseAny();
  absl::StatusOr<NodePtr> ParseStatement();
  absl::Status ParseBodyUntil(std::initializer_list<std::string_view> enders, const Token& opener,
                              NodeList* body);
  absl::StatusOr<NodePtr> ParseSet(const Token& opener);
  absl::StatusOr<NodePtr> ParseIf(const Token& opener);
  absl::StatusOr<NodePtr> ParseIfChain(const Token& opener);
  absl::StatusOr<NodePtr> ParseFor(const Token& opener);
  absl::StatusOr<NodePtr> ParseMacro(const Token& opener);
  absl::StatusOr<NodePtr> ParseCallBlock(const Token& opener);
  absl::StatusOr<NodePtr> ParseFilterBlock(const Token& opener);
  absl::StatusOr<std::vector<Param>> ParseParams();

  // --- Expressions (parse_expression.cc).
  absl::StatusOr<NodePtr> ParseExpression();
  absl::StatusOr<NodePtr> ParseExpressionSequence(bool primary);
  absl::StatusOr<NodePtr> ParseIfExpression();
  absl::StatusOr<NodePtr> ParseLogicalOr();
  absl::StatusOr<NodePtr> ParseLogicalAnd();
  absl::StatusOr<NodePtr> ParseLogicalNot();
  absl::StatusOr<NodePtr> ParseComparison();
  absl::StatusOr<NodePtr> ParseAdditive();
  absl::StatusOr<NodePtr> ParseMultiplicative();
  absl::StatusOr<NodePtr> ParsePower();
  absl::StatusOr<NodePtr> ParseTest();
  absl::StatusOr<NodePtr> ParseFilter();
  absl::StatusOr<NodePtr> ParseUnarySign();
  absl::StatusOr<NodePtr> ParseCallMember();
  absl::StatusOr<NodePtr> ParseCall(NodePtr callee);
  absl::StatusOr<NodeList> ParseArgs(bool parameters);
  absl::StatusOr<NodePtr> ParseMember(NodePtr object);
  absl::StatusOr<NodePtr> ParseSubscript();
  absl::StatusOr<NodePtr> ParsePrimary();
  absl::StatusOr<NodePtr> ParseFilterCall(SourcePos pos);
  absl::StatusOr<NodePtr> ParseArrayLiteral(SourcePos pos);
  absl::StatusOr<NodePtr> ParseObjectLiteral(SourcePos pos);

  LineIndex lines_;
  std::vector<Token> tokens_;
  size_t current_ = 0;
  int depth_ = 0;  // nesting of blocks and parenthesized expressions
  Token end_token_{TokenType::kEndOfInput, "", 0};
};

// Bounds recursion so a hostile template cannot overflow the stack.
// Thread-compatible: scoped to one Parser.
class DepthGuard {
 public:
  explicit DepthGuard(Parser& parser) : parser_(parser) { ++parser_.depth_; }
  ~DepthGuard() { --parser_.depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  Parser& parser_;
};

// Macro bodies that read `varargs` / `kwargs` before declaring them get
// those extra parameters (Jinja's rule, as the reference implements it).
void FindSpecialMacroArgs(const std::vector<Param>& params, const NodeList& body,
                          bool* uses_varargs, bool* uses_kwargs);

// Filter and test names the renderer implements (filters.cc, tests.cc).
bool IsKnownFilter(std::string_view name, bool with_arguments);
bool IsKnownTest(std::string_view name);

}  // namespace warp::chat
