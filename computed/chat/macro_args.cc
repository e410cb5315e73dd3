// Which of the implicit macro parameters `varargs` / `kwargs` a macro body
// reads before declaring them, visiting nodes in Jinja's order (as the
// reference's findAccessedSpecialMacroArguments does).

#include <set>
#include <string>

#include "computed/chat/parser_internal.h"

namespace warp::chat {
namespace {

class SpecialArgFinder {
 public:
  void Declare(const std::string& name) {
    if (name == "varargs" || name == "kwargs") declared_.insert(name);
  }
  void DeclareTarget(const Node* target) {
    if (target == nullptr) return;
    if (target->kind == NodeKind::kIdentifier) Declare(As<IdentifierNode>(*target).name);
    if (target->kind == NodeKind::kTupleLiteral) {
      for (const NodePtr& item : As<ListNode>(*target).items) DeclareTarget(item.get());
    }
  }
  void DeclareParams(const std::vector<Param>& params) {
    for (const Param& param : params) Declare(param.name);
  }
  void VisitDefaults(const std::vector<Param>& params) {
    for (const Param& param : params) Visit(param.default_value.get());
  }
  void Visit(const NodeList& nodes) {
    for (const NodePtr& node : nodes) Visit(node.get());
  }
  void VisitFilter(const Node* filter) {  // a filter's name is syntax, not a variable
    if (filter->kind == NodeKind::kCall) Visit(As<CallNode>(*filter).args);
  }
  void Visit(const Node* node);

  bool accessed(const std::string& name) const { return accessed_.count(name) > 0; }

 private:
  void VisitFor(const ForNode& n);
  void VisitExpression(const Node& node);  // names, calls, literals; operators below
  void VisitOperator(const Node& node);

  std::set<std::string> declared_;
  std::set<std::string> accessed_;
};

// Statements here; expressions in VisitExpression.
void SpecialArgFinder::Visit(const Node* node) {
  if (node == nullptr) return;
  switch (node->kind) {
    case NodeKind::kFor:
      VisitFor(As<ForNode>(*node));
      return;
    case NodeKind::kSet: {
      const auto& n = As<SetNode>(*node);
      DeclareTarget(n.target.get());
      Visit(n.value.get());
      Visit(n.body);
      return;
    }
    case NodeKind::kMacro: {
      const auto& n = As<MacroNode>(*node);
      DeclareParams(n.params);
      VisitDefaults(n.params);
      Visit(n.body);
      return;
    }
    case NodeKind::kCallBlock: {
      const auto& n = As<CallBlockNode>(*node);
      Visit(n.call.get());
      DeclareParams(n.caller_params);
      VisitDefaults(n.caller_params);
      Visit(n.body);
      return;
    }
    case NodeKind::kFilterBlock:
      Visit(As<FilterBlockNode>(*node).body);
      VisitFilter(As<FilterBlockNode>(*node).filter.get());
      return;
    case NodeKind::kIf:
      Visit(As<IfNode>(*node).test.get());
      Visit(As<IfNode>(*node).body);
      Visit(As<IfNode>(*node).alternate);
      return;
    default:
      VisitExpression(*node);
      return;
  }
}

void SpecialArgFinder::VisitFor(const ForNode& n) {
  DeclareTarget(n.target.get());
  if (n.iterable->kind == NodeKind::kSelect) {  // the loop filter is visited last
    Visit(As<SelectNode>(*n.iterable).lhs.get());
    Visit(n.body);
    Visit(n.else_body);
    Visit(As<SelectNode>(*n.iterable).test.get());
    return;
  }
  Visit(n.iterable.get());
  Visit(n.body);
  Visit(n.else_body);
}

void SpecialArgFinder::VisitExpression(const Node& node) {
  switch (node.kind) {
    case NodeKind::kIdentifier: {
      const std::string& name = As<IdentifierNode>(node).name;
      if ((name == "varargs" || name == "kwargs") && declared_.count(name) == 0) accessed_.insert(name);
      return;
    }
    case NodeKind::kMember:
      Visit(As<MemberNode>(node).object.get());
      if (As<MemberNode>(node).computed) Visit(As<MemberNode>(node).property.get());
      return;
    case NodeKind::kKeywordArg:
      Visit(As<KeywordArgNode>(node).value.get());
      return;
    case NodeKind::kArrayLiteral:
    case NodeKind::kTupleLiteral:
      Visit(As<ListNode>(node).items);
      return;
    case NodeKind::kObjectLiteral:
      for (const auto& [key, value] : As<ObjectNode>(node).entries) {
        Visit(key.get());
        Visit(value.get());
      }
      return;
    case NodeKind::kCall:
      Visit(As<CallNode>(node).callee.get());
      Visit(As<CallNode>(node).args);
      return;
    case NodeKind::kSpread:
    case NodeKind::kKeywordSpread:
      Visit(As<SpreadNode>(node).operand.get());
      return;
    default:
      VisitOperator(node);
      return;
  }
}

void SpecialArgFinder::VisitOperator(const Node& node) {
  switch (node.kind) {
    case NodeKind::kFilter:
      Visit(As<FilterNode>(node).operand.get());
      VisitFilter(As<FilterNode>(node).filter.get());
      return;
    case NodeKind::kTest:
      Visit(As<TestNode>(node).operand.get());
      return;
    case NodeKind::kSelect:
      Visit(As<SelectNode>(node).test.get());
      Visit(As<SelectNode>(node).lhs.get());
      return;
    case NodeKind::kUnary:
      Visit(As<UnaryNode>(node).operand.get());
      return;
    case NodeKind::kBinary:
      Visit(As<BinaryNode>(node).left.get());
      Visit(As<BinaryNode>(node).right.get());
      return;
    case NodeKind::kTernary:
      Visit(As<TernaryNode>(node).condition.get());
      Visit(As<TernaryNode>(node).if_true.get());
      Visit(As<TernaryNode>(node).if_false.get());
      return;
    case NodeKind::kSlice:
      Visit(As<SliceNode>(node).start.get());
      Visit(As<SliceNode>(node).stop.get());
      Visit(As<SliceNode>(node).step.get());
      return;
    default:  // text, comments, literals, break/continue
      return;
  }
}

}  // namespace

void FindSpecialMacroArgs(const std::vector<Param>& params, const NodeList& body, bool* uses_varargs,
                          bool* uses_kwargs) {
  SpecialArgFinder finder;
  finder.DeclareParams(params);  // the macro's own defaults are not scanned
  finder.Visit(body);
  *uses_varargs = finder.accessed("varargs");
  *uses_kwargs = finder.accessed("kwargs");
}

}  // namespace warp::chat
