#pragma once

// Syntax tree of a parsed template: the node set of @huggingface/jinja's
// ast.ts. Statements and expressions share one Node base; `kind` selects
// the concrete struct. Every node records where it starts in the source.
//
// Immutable after parsing; shared by all renders of a template.

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "computed/chat/position.h"

namespace warp::chat {

enum class NodeKind {
  // Statements.
  kText, kComment, kIf, kFor, kBreak, kContinue, kSet, kMacro, kCallBlock, kFilterBlock,
  // Expressions.
  kIntLiteral, kFloatLiteral, kStringLiteral, kArrayLiteral, kTupleLiteral, kObjectLiteral,
  kIdentifier, kMember, kCall, kUnary, kBinary, kFilter, kTest, kSelect, kTernary, kSlice,
  kKeywordArg, kSpread, kKeywordSpread,
};

struct Node {
  Node(NodeKind k, SourcePos p) : kind(k), pos(p) {}
  virtual ~Node() = default;
  const NodeKind kind;
  const SourcePos pos;
};

using NodePtr = std::unique_ptr<Node>;
using NodeList = std::vector<NodePtr>;

template <typename T>
const T& As(const Node& node) { return static_cast<const T&>(node); }

// --- Statements -------------------------------------------------------------

struct TextNode : Node {  // literal template text (also a string literal's value)
  TextNode(SourcePos p, std::string t) : Node(NodeKind::kText, p), text(std::move(t)) {}
  std::string text;
};

struct CommentNode : Node {
  explicit CommentNode(SourcePos p) : Node(NodeKind::kComment, p) {}
};

struct IfNode : Node {
  explicit IfNode(SourcePos p) : Node(NodeKind::kIf, p) {}
  NodePtr test;
  NodeList body;
  NodeList alternate;  // {% else %} body, or one nested IfNode for {% elif %}
};

struct ForNode : Node {
  explicit ForNode(SourcePos p) : Node(NodeKind::kFor, p) {}
  NodePtr target;    // IdentifierNode or TupleLiteral of identifiers
  NodePtr iterable;  // a SelectNode for `for x in xs if cond`
  NodeList body;
  NodeList else_body;  // rendered when no iteration completed
};

struct BreakNode : Node {
  explicit BreakNode(SourcePos p) : Node(NodeKind::kBreak, p) {}
};

struct ContinueNode : Node {
  explicit ContinueNode(SourcePos p) : Node(NodeKind::kContinue, p) {}
};

struct SetNode : Node {
  explicit SetNode(SourcePos p) : Node(NodeKind::kSet, p) {}
  NodePtr target;  // identifier, tuple of identifiers, or namespace member
  NodePtr value;   // null for a {% set x %}...{% endset %} block
  NodeList body;
};

// A macro or call-block parameter: `name` or `name=default`.
struct Param {
  std::string name;
  NodePtr default_value;  // may be null
};

struct MacroNode : Node {
  explicit MacroNode(SourcePos p) : Node(NodeKind::kMacro, p) {}
  std::string name;
  std::vector<Param> params;
  NodeList body;
  bool uses_varargs = false;  // the body reads `varargs` / `kwargs` without declaring them
  bool uses_kwargs = false;
};

struct CallBlockNode : Node {  // {% call(params) macro(args) %}body{% endcall %}
  explicit CallBlockNode(SourcePos p) : Node(NodeKind::kCallBlock, p) {}
  NodePtr call;  // CallNode whose callee is an identifier
  std::vector<Param> caller_params;
  NodeList body;
  bool uses_varargs = false;
  bool uses_kwargs = false;
};

struct FilterBlockNode : Node {  // {% filter f %}body{% endfilter %}
  explicit FilterBlockNode(SourcePos p) : Node(NodeKind::kFilterBlock, p) {}
  NodePtr filter;  // IdentifierNode or CallNode with an identifier callee
  NodeList body;
};

// --- Expressions ------------------------------------------------------------

struct NumberNode : Node {  // kIntLiteral or kFloatLiteral
  NumberNode(NodeKind k, SourcePos p, double v) : Node(k, p), value(v) {}
  double value;
};

struct StringNode : Node {
  StringNode(SourcePos p, std::string v) : Node(NodeKind::kStringLiteral, p), value(std::move(v)) {}
  std::string value;
};

struct ListNode : Node {  // kArrayLiteral or kTupleLiteral
  ListNode(NodeKind k, SourcePos p) : Node(k, p) {}
  NodeList items;
};

struct ObjectNode : Node {
  explicit ObjectNode(SourcePos p) : Node(NodeKind::kObjectLiteral, p) {}
  std::vector<std::pair<NodePtr, NodePtr>> entries;
};

struct IdentifierNode : Node {
  IdentifierNode(SourcePos p, std::string n) : Node(NodeKind::kIdentifier, p), name(std::move(n)) {}
  std::string name;
};

struct MemberNode : Node {  // object.property, object[property], object[slice]
  explicit MemberNode(SourcePos p) : Node(NodeKind::kMember, p) {}
  NodePtr object;
  NodePtr property;  // identifier or int literal when !computed
  bool computed = false;
};

struct CallNode : Node {
  explicit CallNode(SourcePos p) : Node(NodeKind::kCall, p) {}
  NodePtr callee;
  NodeList args;  // expressions, KeywordArg, Spread, KeywordSpread
};

struct UnaryNode : Node {  // not, -, +
  UnaryNode(SourcePos p, std::string o) : Node(NodeKind::kUnary, p), op(std::move(o)) {}
  std::string op;
  NodePtr operand;
};

struct BinaryNode : Node {  // arithmetic, comparison, and/or, in / not in, ~
  BinaryNode(SourcePos p, std::string o) : Node(NodeKind::kBinary, p), op(std::move(o)) {}
  std::string op;
  NodePtr left;
  NodePtr right;
};

struct FilterNode : Node {  // operand | filter
  explicit FilterNode(SourcePos p) : Node(NodeKind::kFilter, p) {}
  NodePtr operand;
  NodePtr filter;  // IdentifierNode or CallNode with an identifier callee
};

struct TestNode : Node {  // operand is [not] name [argument]
  explicit TestNode(SourcePos p) : Node(NodeKind::kTest, p) {}
  NodePtr operand;
  bool negate = false;
  std::string name;
  NodePtr argument;  // `is divisibleby 3`, `is divisibleby(3)`; null: none
};

struct SelectNode : Node {  // `lhs if test` without else: undefined when false
  explicit SelectNode(SourcePos p) : Node(NodeKind::kSelect, p) {}
  NodePtr lhs;
  NodePtr test;
};

struct TernaryNode : Node {
  explicit TernaryNode(SourcePos p) : Node(NodeKind::kTernary, p) {}
  NodePtr condition;
  NodePtr if_true;
  NodePtr if_false;
};

struct SliceNode : Node {  // [start:stop:step]; any part may be null
  explicit SliceNode(SourcePos p) : Node(NodeKind::kSlice, p) {}
  NodePtr start;
  NodePtr stop;
  NodePtr step;
};

struct KeywordArgNode : Node {  // name=value in a call
  KeywordArgNode(SourcePos p, std::string k) : Node(NodeKind::kKeywordArg, p), key(std::move(k)) {}
  std::string key;
  NodePtr value;
};

struct SpreadNode : Node {  // *args (kSpread) or **kwargs (kKeywordSpread)
  SpreadNode(NodeKind k, SourcePos p) : Node(k, p) {}
  NodePtr operand;
};

}  // namespace warp::chat
