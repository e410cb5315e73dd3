// Expression parsing, lowest precedence first (as @huggingface/jinja):
// ternary/select < or < and < not < comparison/in < + - ~ < * / // % < **
// < is-test < |filter < unary sign < call/member < primary.

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/parser_internal.h"
#include "computed/chat/strings.h"

namespace warp::chat {
namespace {

NodePtr MakeBinary(SourcePos pos, std::string op, NodePtr left, NodePtr right) {
  auto node = std::make_unique<BinaryNode>(pos, std::move(op));
  node->left = std::move(left);
  node->right = std::move(right);
  return node;
}

NodePtr MakeUnary(SourcePos pos, std::string op, NodePtr operand) {
  auto node = std::make_unique<UnaryNode>(pos, std::move(op));
  node->operand = std::move(operand);
  return node;
}

}  // namespace

absl::StatusOr<NodePtr> Parser::ParseExpression() { return ParseIfExpression(); }

absl::StatusOr<NodePtr> Parser::ParseExpressionSequence(bool primary) {
  auto parse = [&]() { return primary ? ParsePrimary() : ParseExpression(); };
  WARP_ASSIGN_OR_RETURN(NodePtr first, parse());
  if (!Is(TokenType::kComma)) return first;
  auto tuple = std::make_unique<ListNode>(NodeKind::kTupleLiteral, first->pos);
  tuple->items.push_back(std::move(first));
  while (true) {
    ++current_;  // ,
    WARP_ASSIGN_OR_RETURN(NodePtr item, parse());
    tuple->items.push_back(std::move(item));
    if (!Is(TokenType::kComma)) break;
  }
  return tuple;
}

absl::StatusOr<NodePtr> Parser::ParseIfExpression() {
  WARP_ASSIGN_OR_RETURN(NodePtr value, ParseLogicalOr());
  if (!IsIdentifier("if")) return value;
  const SourcePos pos = value->pos;
  ++current_;
  WARP_ASSIGN_OR_RETURN(NodePtr test, ParseLogicalOr());
  if (IsIdentifier("else")) {
    ++current_;
    auto node = std::make_unique<TernaryNode>(pos);
    node->condition = std::move(test);
    node->if_true = std::move(value);
    WARP_ASSIGN_OR_RETURN(node->if_false, ParseIfExpression());
    return node;
  }
  auto node = std::make_unique<SelectNode>(pos);
  node->lhs = std::move(value);
  node->test = std::move(test);
  return node;
}

absl::StatusOr<NodePtr> Parser::ParseLogicalOr() {
  WARP_ASSIGN_OR_RETURN(NodePtr left, ParseLogicalAnd());
  while (IsIdentifier("or")) {
    const SourcePos pos = Here();
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr right, ParseLogicalAnd());
    left = MakeBinary(pos, "or", std::move(left), std::move(right));
  }
  return left;
}

absl::StatusOr<NodePtr> Parser::ParseLogicalAnd() {
  WARP_ASSIGN_OR_RETURN(NodePtr left, ParseLogicalNot());
  while (IsIdentifier("and")) {
    const SourcePos pos = Here();
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr right, ParseLogicalNot());
    left = MakeBinary(pos, "and", std::move(left), std::move(right));
  }
  return left;
}

// `not` binds looser than comparisons: `not a == b` is `not (a == b)`.
absl::StatusOr<NodePtr> Parser::ParseLogicalNot() {
  DepthGuard guard(*this);
  WARP_RETURN_IF_ERROR(EnterNesting());
  NodePtr result;
  while (IsIdentifier("not")) {
    const SourcePos pos = Here();
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr operand, ParseLogicalNot());
    result = MakeUnary(pos, "not", std::move(operand));
  }
  if (result) return result;
  return ParseComparison();
}

absl::StatusOr<NodePtr> Parser::ParseComparison() {
  WARP_ASSIGN_OR_RETURN(NodePtr left, ParseAdditive());
  while (true) {
    const SourcePos pos = Here();
    std::string op;
    if (IsIdentifier("not") && IsIdentifier("in", 1)) {
      op = "not in";
      current_ += 2;
    } else if (IsIdentifier("in")) {
      op = "in";
      ++current_;
    } else if (Is(TokenType::kComparisonOperator)) {
      op = Peek().value;
      ++current_;
    } else {
      break;
    }
    WARP_ASSIGN_OR_RETURN(NodePtr right, ParseAdditive());
    left = MakeBinary(pos, std::move(op), std::move(left), std::move(right));
  }
  return left;
}

absl::StatusOr<NodePtr> Parser::ParseAdditive() {
  WARP_ASSIGN_OR_RETURN(NodePtr left, ParseMultiplicative());
  while (Is(TokenType::kAdditiveOperator)) {
    const SourcePos pos = Here();
    std::string op = Peek().value;
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr right, ParseMultiplicative());
    left = MakeBinary(pos, std::move(op), std::move(left), std::move(right));
  }
  return left;
}

absl::StatusOr<NodePtr> Parser::ParseMultiplicative() {
  WARP_ASSIGN_OR_RETURN(NodePtr left, ParsePower());
  while (Is(TokenType::kMultiplicativeOperator)) {
    const SourcePos pos = Here();
    std::string op = Peek().value;
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr right, ParsePower());
    left = MakeBinary(pos, std::move(op), std::move(left), std::move(right));
  }
  return left;
}

// Left-associative, as in Jinja: 2 ** 3 ** 2 == (2 ** 3) ** 2.
absl::StatusOr<NodePtr> Parser::ParsePower() {
  WARP_ASSIGN_OR_RETURN(NodePtr left, ParseTest());
  while (Is(TokenType::kPowerOperator)) {
    const SourcePos pos = Here();
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr right, ParseTest());
    left = MakeBinary(pos, "**", std::move(left), std::move(right));
  }
  return left;
}

absl::StatusOr<NodePtr> Parser::ParseTest() {
  WARP_ASSIGN_OR_RETURN(NodePtr operand, ParseFilter());
  while (IsIdentifier("is")) {
    ++current_;
    auto node = std::make_unique<TestNode>(operand->pos);
    node->negate = IsIdentifier("not");
    if (node->negate) ++current_;
    if (!Is(TokenType::kIdentifier)) return SyntaxError(Cat("expected a test name after 'is', got '", Peek().value, "'"));
    const SourcePos name_pos = Here();
    node->name = Peek().value;
    ++current_;
    if (!IsKnownTest(node->name)) {
      return ErrorAt(absl::StatusCode::kUnimplemented, name_pos, Cat("unsupported Jinja test: ", node->name));
    }
    // One argument, as Jinja2's parse_test takes it: a primary with its
    // postfix (`divisibleby 3`, `divisibleby(3)`, `in [1, 2]`), unless what
    // follows is else/or/and (or ends the expression).
    const bool argument_starts =
        Is(TokenType::kNumericLiteral) || Is(TokenType::kStringLiteral) || Is(TokenType::kOpenParen) ||
        Is(TokenType::kOpenSquareBracket) || Is(TokenType::kOpenCurlyBracket) ||
        (Is(TokenType::kIdentifier) && !IsIdentifier("else") && !IsIdentifier("or") && !IsIdentifier("and"));
    if (argument_starts) {
      if (IsIdentifier("is")) return SyntaxError("You cannot chain multiple tests with is");
      WARP_ASSIGN_OR_RETURN(node->argument, ParseCallMember());
    }
    node->operand = std::move(operand);
    operand = std::move(node);
  }
  return operand;
}

// The filter of `x | f` or `x | f(args)`, or of {% filter f %}.
absl::StatusOr<NodePtr> Parser::ParseFilterCall(SourcePos pos) {
  if (!Is(TokenType::kIdentifier)) return SyntaxError(Cat("expected a filter name, got '", Peek().value, "'"));
  NodePtr filter = std::make_unique<IdentifierNode>(pos, Peek().value);
  const std::string name = Peek().value;
  ++current_;
  const bool with_arguments = Is(TokenType::kOpenParen);
  if (with_arguments) {
    WARP_ASSIGN_OR_RETURN(filter, ParseCall(std::move(filter)));
    if (filter->kind != NodeKind::kCall || As<CallNode>(*filter).callee->kind != NodeKind::kIdentifier) {
      return ErrorAt(absl::StatusCode::kInvalidArgument, pos, "expected a filter name or call");
    }
  }
  if (!IsKnownFilter(name, with_arguments)) {
    return ErrorAt(absl::StatusCode::kUnimplemented, pos,
                   Cat("unsupported Jinja filter: ", name, with_arguments ? "(...)" : ""));
  }
  return filter;
}

absl::StatusOr<NodePtr> Parser::ParseFilter() {
  WARP_ASSIGN_OR_RETURN(NodePtr operand, ParseUnarySign());
  while (Is(TokenType::kPipe)) {
    ++current_;
    auto node = std::make_unique<FilterNode>(operand->pos);
    WARP_ASSIGN_OR_RETURN(node->filter, ParseFilterCall(Here()));
    node->operand = std::move(operand);
    operand = std::move(node);
  }
  return operand;
}

absl::StatusOr<NodePtr> Parser::ParseUnarySign() {
  DepthGuard guard(*this);
  WARP_RETURN_IF_ERROR(EnterNesting());
  const Token& token = Peek();
  if ((token.type == TokenType::kUnaryOperator || token.type == TokenType::kAdditiveOperator) &&
      (token.value == "-" || token.value == "+")) {
    ++current_;
    WARP_ASSIGN_OR_RETURN(NodePtr operand, ParseUnarySign());
    return MakeUnary(PosOf(token), token.value, std::move(operand));
  }
  return ParseCallMember();
}

}  // namespace warp::chat
