// Primary expressions and what follows them: calls and their argument
// lists, member access and subscripts/slices, literals.

#include <cstdlib>
#include <set>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/parser_internal.h"
#include "computed/chat/strings.h"

namespace warp::chat {

absl::StatusOr<NodePtr> Parser::ParseCallMember() {
  WARP_ASSIGN_OR_RETURN(NodePtr primary, ParsePrimary());
  WARP_ASSIGN_OR_RETURN(NodePtr member, ParseMember(std::move(primary)));
  if (Is(TokenType::kOpenParen)) return ParseCall(std::move(member));
  return member;
}

absl::StatusOr<NodePtr> Parser::ParseCall(NodePtr callee) {
  auto call = std::make_unique<CallNode>(callee->pos);
  call->callee = std::move(callee);
  WARP_ASSIGN_OR_RETURN(call->args, ParseArgs(/*parameters=*/false));
  WARP_ASSIGN_OR_RETURN(NodePtr expr, ParseMember(std::move(call)));
  if (Is(TokenType::kOpenParen)) return ParseCall(std::move(expr));
  return expr;
}

// (a, b=1, *rest, **kw). As parameters: names and name=default only.
absl::StatusOr<NodeList> Parser::ParseArgs(bool parameters) {
  WARP_RETURN_IF_ERROR(Expect(TokenType::kOpenParen, "'('"));
  NodeList args;
  std::set<std::string> names;
  bool saw_keyword = false;
  bool saw_spread = false;
  while (!Is(TokenType::kCloseParen)) {
    const SourcePos pos = Here();
    const bool keyword_spread = Is(TokenType::kPowerOperator);
    const bool spread = Is(TokenType::kMultiplicativeOperator) && Peek().value == "*";
    if (parameters && (keyword_spread || spread)) return SyntaxError("argument unpacking is not allowed in parameter declarations");
    if (keyword_spread) {
      ++current_;
      auto node = std::make_unique<SpreadNode>(NodeKind::kKeywordSpread, pos);
      WARP_ASSIGN_OR_RETURN(node->operand, ParseExpression());
      args.push_back(std::move(node));
      if (Is(TokenType::kComma)) ++current_;
      if (!Is(TokenType::kCloseParen)) return SyntaxError("'**' must be applied to the final argument");
      break;
    }
    NodePtr arg;
    if (spread) {
      if (saw_spread) return SyntaxError("only one '*' argument unpacking is allowed");
      saw_spread = true;
      ++current_;
      auto node = std::make_unique<SpreadNode>(NodeKind::kSpread, pos);
      WARP_ASSIGN_OR_RETURN(node->operand, ParseExpression());
      arg = std::move(node);
    } else {
      WARP_ASSIGN_OR_RETURN(arg, ParseExpression());
      if (Is(TokenType::kEquals)) {
        ++current_;
        if (arg->kind != NodeKind::kIdentifier) {
          return ErrorAt(absl::StatusCode::kInvalidArgument, pos,
                         parameters ? "expected a parameter name" : "expected a name for the keyword argument");
        }
        auto kw = std::make_unique<KeywordArgNode>(pos, As<IdentifierNode>(*arg).name);
        WARP_ASSIGN_OR_RETURN(kw->value, ParseExpression());
        arg = std::move(kw);
      }
      if (parameters) {
        if (arg->kind != NodeKind::kIdentifier && arg->kind != NodeKind::kKeywordArg) {
          return ErrorAt(absl::StatusCode::kInvalidArgument, pos, "expected a parameter name");
        }
        const std::string& name = arg->kind == NodeKind::kIdentifier ? As<IdentifierNode>(*arg).name
                                                                     : As<KeywordArgNode>(*arg).key;
        if (!names.insert(name).second) {
          return ErrorAt(absl::StatusCode::kInvalidArgument, pos, Cat("duplicate parameter name: ", name));
        }
      }
      if (arg->kind == NodeKind::kKeywordArg) {
        saw_keyword = true;
      } else if (saw_keyword) {
        return ErrorAt(absl::StatusCode::kInvalidArgument, pos,
                       parameters ? "non-default parameter follows a default parameter"
                                  : "positional argument follows a keyword argument");
      } else if (saw_spread) {
        return ErrorAt(absl::StatusCode::kInvalidArgument, pos, "positional argument follows '*' unpacking");
      }
    }
    args.push_back(std::move(arg));
    if (Is(TokenType::kComma)) ++current_;
  }
  ++current_;  // )
  return args;
}

// The inside of [...]: an index expression or a slice start:stop:step.
absl::StatusOr<NodePtr> Parser::ParseSubscript() {
  const SourcePos pos = Here();
  NodeList parts;
  bool is_slice = false;
  while (!Is(TokenType::kCloseSquareBracket)) {
    if (Is(TokenType::kColon)) {
      parts.push_back(nullptr);
      ++current_;
      is_slice = true;
    } else {
      WARP_ASSIGN_OR_RETURN(NodePtr part, ParseExpression());
      parts.push_back(std::move(part));
      if (Is(TokenType::kColon)) {
        ++current_;
        is_slice = true;
      }
    }
  }
  if (parts.empty()) return SyntaxError("expected an index or slice inside []");
  if (!is_slice) return std::move(parts[0]);
  if (parts.size() > 3) return ErrorAt(absl::StatusCode::kInvalidArgument, pos, "a slice takes at most 3 parts");
  auto slice = std::make_unique<SliceNode>(pos);
  parts.resize(3);
  slice->start = std::move(parts[0]);
  slice->stop = std::move(parts[1]);
  slice->step = std::move(parts[2]);
  return slice;
}

absl::StatusOr<NodePtr> Parser::ParseMember(NodePtr object) {
  while (Is(TokenType::kDot) || Is(TokenType::kOpenSquareBracket)) {
    const bool computed = Is(TokenType::kOpenSquareBracket);
    ++current_;
    auto member = std::make_unique<MemberNode>(object->pos);
    member->computed = computed;
    if (computed) {
      WARP_ASSIGN_OR_RETURN(member->property, ParseSubscript());
      WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseSquareBracket, "']'"));
    } else {
      WARP_ASSIGN_OR_RETURN(member->property, ParsePrimary());
      if (member->property->kind != NodeKind::kIdentifier && member->property->kind != NodeKind::kIntLiteral) {
        return ErrorAt(absl::StatusCode::kInvalidArgument, member->property->pos, "expected a name after '.'");
      }
    }
    member->object = std::move(object);
    object = std::move(member);
  }
  return object;
}

absl::StatusOr<NodePtr> Parser::ParseArrayLiteral(SourcePos pos) {
  auto node = std::make_unique<ListNode>(NodeKind::kArrayLiteral, pos);
  while (!Is(TokenType::kCloseSquareBracket)) {
    WARP_ASSIGN_OR_RETURN(NodePtr item, ParseExpression());
    node->items.push_back(std::move(item));
    if (Is(TokenType::kComma)) ++current_;
  }
  ++current_;  // ]
  return node;
}

absl::StatusOr<NodePtr> Parser::ParseObjectLiteral(SourcePos pos) {
  auto node = std::make_unique<ObjectNode>(pos);
  while (!Is(TokenType::kCloseCurlyBracket)) {
    WARP_ASSIGN_OR_RETURN(NodePtr key, ParseExpression());
    WARP_RETURN_IF_ERROR(Expect(TokenType::kColon, "':' between key and value"));
    WARP_ASSIGN_OR_RETURN(NodePtr value, ParseExpression());
    node->entries.emplace_back(std::move(key), std::move(value));
    if (Is(TokenType::kComma)) ++current_;
  }
  ++current_;  // }
  return node;
}

absl::StatusOr<NodePtr> Parser::ParsePrimary() {
  DepthGuard guard(*this);
  WARP_RETURN_IF_ERROR(EnterNesting());
  const Token& token = Peek();
  const SourcePos pos = PosOf(token);
  switch (token.type) {
    case TokenType::kNumericLiteral: {
      ++current_;
      const double value = std::strtod(token.value.c_str(), nullptr);
      const bool is_float = token.value.find_first_of(".e") != std::string::npos;
      return std::make_unique<NumberNode>(is_float ? NodeKind::kFloatLiteral : NodeKind::kIntLiteral, pos, value);
    }
    case TokenType::kStringLiteral: {
      ++current_;
      std::string value = token.value;
      while (Is(TokenType::kStringLiteral)) value += tokens_[current_++].value;  // 'a' 'b' == 'ab'
      return std::make_unique<StringNode>(pos, std::move(value));
    }
    case TokenType::kIdentifier:
      ++current_;
      return std::make_unique<IdentifierNode>(pos, token.value);
    case TokenType::kOpenParen: {
      ++current_;
      WARP_ASSIGN_OR_RETURN(NodePtr expr, ParseExpressionSequence(/*primary=*/false));
      WARP_RETURN_IF_ERROR(Expect(TokenType::kCloseParen, "')'"));
      return expr;
    }
    case TokenType::kOpenSquareBracket:
      ++current_;
      return ParseArrayLiteral(pos);
    case TokenType::kOpenCurlyBracket:
      ++current_;
      return ParseObjectLiteral(pos);
    case TokenType::kEndOfInput:
      return SyntaxError("unexpected end of template inside an expression");
    default:
      return SyntaxError(Cat("unexpected '", token.value, "' in an expression"));
  }
}

}  // namespace warp::chat
