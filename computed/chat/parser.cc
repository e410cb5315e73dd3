#include "computed/chat/parser.h"

#include <algorithm>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/parser_internal.h"
#include "computed/chat/strings.h"

namespace warp::chat {
namespace {

constexpr int kMaxNesting = 256;

// Jinja statements the renderer deliberately does not implement.
constexpr std::string_view kUnsupportedStatements[] = {
    "include", "extends", "block", "import", "from", "with", "raw", "autoescape",
    "do", "trans", "pluralize", "print"};
// Tags that only make sense after their opener.
constexpr std::string_view kClosingTags[] = {
    "endif", "elif", "else", "endfor", "endset", "endmacro", "endcall", "endfilter"};

template <typename List>
bool Contains(const List& list, std::string_view name) {
  return std::find(std::begin(list), std::end(list), name) != std::end(list);
}

std::string Describe(const Token& token) {
  switch (token.type) {
    case TokenType::kText:
    case TokenType::kEndOfInput:
    case TokenType::kComment:
      return std::string(TokenTypeName(token.type));
    case TokenType::kStringLiteral:
      return Cat("string '", token.value, "'");
    default:
      return Cat("'", token.value, "'");
  }
}

}  // namespace

const Token& Parser::Peek(size_t ahead) const {
  return current_ + ahead < tokens_.size() ? tokens_[current_ + ahead] : end_token_;
}

bool Parser::IsStatement(std::initializer_list<std::string_view> names) const {
  if (!Is(TokenType::kOpenStatement) || !Is(TokenType::kIdentifier, 1)) return false;
  return std::find(names.begin(), names.end(), Peek(1).value) != names.end();
}

absl::Status Parser::SyntaxError(std::string_view message) const {
  return ErrorAt(absl::StatusCode::kInvalidArgument, Here(), message);
}

absl::Status Parser::Unsupported(SourcePos pos, std::string_view feature) const {
  return ErrorAt(absl::StatusCode::kUnimplemented, pos, Cat("unsupported Jinja feature: ", feature));
}

absl::Status Parser::Expect(TokenType type, std::string_view what) {
  if (!Is(type)) return SyntaxError(Cat("expected ", what, ", got ", Describe(Peek())));
  ++current_;
  return absl::OkStatus();
}

absl::Status Parser::EnterNesting() {
  if (depth_ > kMaxNesting) return SyntaxError("template nests too deeply");
  return absl::OkStatus();
}

absl::Status Parser::ExpectEndTag(std::string_view name, const Token& opener) {
  if (Is(TokenType::kEndOfInput)) {
    return SyntaxError(Cat("unterminated {% ", opener.value, " %} (opened at ", ToString(PosOf(opener)),
                                    "): expected {% ", name, " %}"));
  }
  WARP_RETURN_IF_ERROR(Expect(TokenType::kOpenStatement, Cat("{% ", name, " %}")));
  if (!IsIdentifier(name)) return SyntaxError(Cat("expected {% ", name, " %}, got ", Describe(Peek())));
  ++current_;
  return Expect(TokenType::kCloseStatement, "'%}'");
}

absl::Status Parser::ParseBodyUntil(std::initializer_list<std::string_view> enders, const Token& opener,
                                    NodeList* body) {
  while (!IsStatement(enders)) {
    if (Is(TokenType::kEndOfInput)) {
      return SyntaxError(Cat("unterminated {% ", opener.value, " %} (opened at ", ToString(PosOf(opener)),
                                      "): expected {% ", *std::prev(enders.end()), " %}"));
    }
    WARP_ASSIGN_OR_RETURN(NodePtr node, ParseAny());
    body->push_back(std::move(node));
  }
  return absl::OkStatus();
}

absl::StatusOr<NodeList> Parser::ParseAll() {
  NodeList program;
  while (current_ < tokens_.size()) {
    WARP_ASSIGN_OR_RETURN(NodePtr node, ParseAny());
    program.push_back(std::move(node));
  }
  return program;
}

absl::StatusOr<NodePtr> Parser::ParseAny() {
  DepthGuard guard(*this);
  WARP_RETURN_IF_ERROR(EnterNesting());
  const Token& token = Peek();
  switch (token.type) {
    case TokenType::kComment:
      ++current_;
      return std::make_unique<CommentNode>(PosOf(token));
    case TokenType::kText:
      ++current_;
      return std::make_unique<TextNode>(PosOf(token), token.value);
    case TokenType::kOpenStatement:
      return ParseStatement();
    case TokenType::kOpenExpression: {
      ++current_;
      WARP_ASSIGN_OR_RETURN(NodePtr expr, ParseExpression());
      WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseExpression, "'}}'"));
      return expr;
    }
    default:
      return SyntaxError(Cat("unexpected ", Describe(token)));
  }
}

absl::StatusOr<NodePtr> Parser::ParseStatement() {
  ++current_;  // {%
  if (!Is(TokenType::kIdentifier)) return SyntaxError(Cat("expected a statement name, got ", Describe(Peek())));
  const Token& opener = Peek();
  const std::string& name = opener.value;
  if (name == "set") return ParseSet(opener);
  if (name == "if") return ParseIf(opener);
  if (name == "for") return ParseFor(opener);
  if (name == "macro") return ParseMacro(opener);
  if (name == "call") return ParseCallBlock(opener);
  if (name == "filter") return ParseFilterBlock(opener);
  if (name == "break" || name == "continue") {
    ++current_;
    WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    if (name == "break") return std::make_unique<BreakNode>(PosOf(opener));
    return std::make_unique<ContinueNode>(PosOf(opener));
  }
  if (Contains(kClosingTags, name)) return SyntaxError(Cat("unexpected {% ", name, " %}"));
  if (Contains(kUnsupportedStatements, name)) return Unsupported(PosOf(opener), Cat("{% ", name, " %}"));
  return Unsupported(PosOf(opener), Cat("unknown statement {% ", name, " %}"));
}

absl::StatusOr<NodePtr> Parser::ParseSet(const Token& opener) {
  ++current_;
  auto node = std::make_unique<SetNode>(PosOf(opener));
  WARP_ASSIGN_OR_RETURN(node->target, ParseExpressionSequence(/*primary=*/false));
  if (Is(TokenType::kEquals)) {
    ++current_;
    WARP_ASSIGN_OR_RETURN(node->value, ParseExpressionSequence(/*primary=*/false));
  } else {
    WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'=' or '%}'"));
    WARP_RETURN_IF_ERROR(ParseBodyUntil({"endset"}, opener, &node->body));
    current_ += 2;  // {% endset
  }
  WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  return node;
}

absl::StatusOr<NodePtr> Parser::ParseIf(const Token& opener) {
  WARP_ASSIGN_OR_RETURN(NodePtr node, ParseIfChain(opener));
  WARP_RETURN_IF_ERROR(ExpectEndTag("endif", opener));
  return node;
}

// `if` or `elif` up to (not including) the shared {% endif %}.
absl::StatusOr<NodePtr> Parser::ParseIfChain(const Token& opener) {
  auto node = std::make_unique<IfNode>(Here());
  ++current_;  // if / elif
  // No conditional expression at the top of the test (Jinja2's parse_if:
  // with_condexpr=False): `{% if a if b else c %}` is a syntax error there.
  WARP_ASSIGN_OR_RETURN(node->test, ParseLogicalOr());
  WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  WARP_RETURN_IF_ERROR(ParseBodyUntil({"elif", "else", "endif"}, opener, &node->body));
  if (IsStatement({"elif"})) {
    ++current_;  // {%
    WARP_ASSIGN_OR_RETURN(NodePtr elif, ParseIfChain(opener));
    node->alternate.push_back(std::move(elif));
  } else if (IsStatement({"else"})) {
    current_ += 2;
    WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    WARP_RETURN_IF_ERROR(ParseBodyUntil({"endif"}, opener, &node->alternate));
  }
  return node;
}

absl::StatusOr<NodePtr> Parser::ParseFor(const Token& opener) {
  ++current_;
  auto node = std::make_unique<ForNode>(PosOf(opener));
  WARP_ASSIGN_OR_RETURN(node->target, ParseExpressionSequence(/*primary=*/true));
  if (node->target->kind != NodeKind::kIdentifier && node->target->kind != NodeKind::kTupleLiteral) {
    return ErrorAt(absl::StatusCode::kInvalidArgument, node->target->pos, "expected a loop variable name or tuple");
  }
  if (!IsIdentifier("in")) return SyntaxError(Cat("expected 'in' after the loop variable, got ", Describe(Peek())));
  ++current_;
  WARP_ASSIGN_OR_RETURN(node->iterable, ParseExpression());
  if (IsIdentifier("recursive")) return Unsupported(Here(), "recursive for loops");
  WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  WARP_RETURN_IF_ERROR(ParseBodyUntil({"else", "endfor"}, opener, &node->body));
  if (IsStatement({"else"})) {
    current_ += 2;
    WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
    WARP_RETURN_IF_ERROR(ParseBodyUntil({"endfor"}, opener, &node->else_body));
  }
  WARP_RETURN_IF_ERROR(ExpectEndTag("endfor", opener));
  return node;
}

absl::StatusOr<std::vector<Param>> Parser::ParseParams() {
  WARP_ASSIGN_OR_RETURN(NodeList args, ParseArgs(/*parameters=*/true));
  std::vector<Param> params;
  for (NodePtr& arg : args) {
    if (arg->kind == NodeKind::kIdentifier) {
      params.push_back(Param{As<IdentifierNode>(*arg).name, nullptr});
    } else {
      auto& kw = static_cast<KeywordArgNode&>(*arg);
      params.push_back(Param{kw.key, std::move(kw.value)});
    }
  }
  return params;
}

absl::StatusOr<NodePtr> Parser::ParseMacro(const Token& opener) {
  ++current_;
  auto node = std::make_unique<MacroNode>(PosOf(opener));
  if (!Is(TokenType::kIdentifier)) return SyntaxError(Cat("expected a macro name, got ", Describe(Peek())));
  node->name = Peek().value;
  ++current_;
  WARP_ASSIGN_OR_RETURN(node->params, ParseParams());
  WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  WARP_RETURN_IF_ERROR(ParseBodyUntil({"endmacro"}, opener, &node->body));
  WARP_RETURN_IF_ERROR(ExpectEndTag("endmacro", opener));
  FindSpecialMacroArgs(node->params, node->body, &node->uses_varargs, &node->uses_kwargs);
  return node;
}

absl::StatusOr<NodePtr> Parser::ParseCallBlock(const Token& opener) {
  ++current_;
  auto node = std::make_unique<CallBlockNode>(PosOf(opener));
  if (Is(TokenType::kOpenParen)) {
    WARP_ASSIGN_OR_RETURN(node->caller_params, ParseParams());
  }
  if (!Is(TokenType::kIdentifier)) return SyntaxError(Cat("expected a macro name after {% call, got ", Describe(Peek())));
  auto call = std::make_unique<CallNode>(Here());
  call->callee = std::make_unique<IdentifierNode>(Here(), Peek().value);
  ++current_;
  WARP_ASSIGN_OR_RETURN(call->args, ParseArgs(/*parameters=*/false));
  node->call = std::move(call);
  WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  WARP_RETURN_IF_ERROR(ParseBodyUntil({"endcall"}, opener, &node->body));
  WARP_RETURN_IF_ERROR(ExpectEndTag("endcall", opener));
  FindSpecialMacroArgs(node->caller_params, node->body, &node->uses_varargs, &node->uses_kwargs);
  return node;
}

absl::StatusOr<NodePtr> Parser::ParseFilterBlock(const Token& opener) {
  ++current_;
  auto node = std::make_unique<FilterBlockNode>(PosOf(opener));
  WARP_ASSIGN_OR_RETURN(node->filter, ParseFilterCall(Here()));
  WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseStatement, "'%}'"));
  WARP_RETURN_IF_ERROR(ParseBodyUntil({"endfilter"}, opener, &node->body));
  WARP_RETURN_IF_ERROR(ExpectEndTag("endfilter", opener));
  return node;
}

absl::StatusOr<NodeList> ParseTemplate(std::string_view source) {
  WARP_ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return Parser(source, std::move(tokens)).ParseAll();
}

}  // namespace warp::chat
