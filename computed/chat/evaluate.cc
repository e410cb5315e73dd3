// Expression evaluation of the Interpreter.

#include <cmath>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/interpreter.h"
#include "computed/chat/operators.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

absl::Status Error(std::string_view message) { return absl::InvalidArgumentError(std::string(message)); }

// Python-style slice bounds with the reference's clamping (utils.ts slice).
std::vector<size_t> SliceIndices(double length, const Value& start_v, const Value& stop_v, const Value& step_v) {
  const double step = step_v.is(Type::kUndefined) ? 1 : step_v.number();
  const double direction = step > 0 ? 1 : (step < 0 ? -1 : 0);
  double start;
  double stop;
  if (direction >= 0) {
    start = start_v.is(Type::kUndefined) ? 0 : start_v.number();
    start = start < 0 ? std::max(length + start, 0.0) : std::min(start, length);
    stop = stop_v.is(Type::kUndefined) ? length : stop_v.number();
    stop = stop < 0 ? std::max(length + stop, 0.0) : std::min(stop, length);
  } else {
    start = start_v.is(Type::kUndefined) ? length - 1 : start_v.number();
    start = start < 0 ? std::max(length + start, -1.0) : std::min(start, length - 1);
    stop = stop_v.is(Type::kUndefined) ? -1 : stop_v.number();
    stop = stop < -1 ? std::max(length + stop, -1.0) : std::min(stop, length - 1);
  }
  std::vector<size_t> indices;
  for (double i = start; direction * i < direction * stop; i += step) indices.push_back(static_cast<size_t>(i));
  return indices;
}

}  // namespace

absl::StatusOr<Value> Interpreter::Evaluate(const Node& node, const ScopePtr& scope) {
  if (++steps_ > kMaxRenderSteps) {
    return ErrorAt(absl::StatusCode::kResourceExhausted, node.pos,
                   Cat("rendering stopped after ", kMaxRenderSteps, " steps (a loop without end?)"));
  }
  absl::StatusOr<Value> result = EvaluateNode(node, scope);
  if (!result.ok()) return WithPosition(result.status(), node.pos);
  if (result->is(Value::Type::kString) && result->string().size() > kMaxRenderBytes) {
    return ErrorAt(absl::StatusCode::kResourceExhausted, node.pos,
                   Cat("a string of more than ", kMaxRenderBytes >> 20, " MiB"));
  }
  return result;
}

absl::StatusOr<Value> Interpreter::EvaluateNode(const Node& node, const ScopePtr& scope) {
  switch (node.kind) {
    case NodeKind::kText: return Value::String(As<TextNode>(node).text);
    case NodeKind::kComment: return Value();
    case NodeKind::kIf: return ExecIf(As<IfNode>(node), scope);
    case NodeKind::kFor: return ExecFor(As<ForNode>(node), scope);
    case NodeKind::kSet: return ExecSet(As<SetNode>(node), scope);
    case NodeKind::kMacro: return ExecMacro(As<MacroNode>(node), scope);
    case NodeKind::kCallBlock: return ExecCallBlock(As<CallBlockNode>(node), scope);
    case NodeKind::kFilterBlock: return ExecFilterBlock(As<FilterBlockNode>(node), scope);
    case NodeKind::kBreak:
    case NodeKind::kContinue:
      flow_ = node.kind == NodeKind::kBreak ? Flow::kBreak : Flow::kContinue;
      flow_pos_ = node.pos;
      return Value();
    case NodeKind::kIdentifier: {
      const std::string& name = As<IdentifierNode>(node).name;
      if (name == "namespace" && !scope->HasLocal(name)) return NamespaceFunction();
      return scope->Lookup(name);
    }
    case NodeKind::kCall: return EvaluateCall(As<CallNode>(node), scope);
    case NodeKind::kMember: return EvaluateMember(As<MemberNode>(node), scope);
    case NodeKind::kUnary: {
      const auto& unary = As<UnaryNode>(node);
      WARP_ASSIGN_OR_RETURN(Value operand, Evaluate(*unary.operand, scope));
      return ApplyUnary(unary.op, operand);
    }
    case NodeKind::kBinary: return EvaluateBinary(As<BinaryNode>(node), scope);
    case NodeKind::kFilter: {
      const auto& filter = As<FilterNode>(node);
      WARP_ASSIGN_OR_RETURN(Value operand, Evaluate(*filter.operand, scope));
      return ApplyFilter(operand, *filter.filter, scope);
    }
    case NodeKind::kTest: return EvaluateTest(As<TestNode>(node), scope);
    case NodeKind::kSelect: {
      const auto& select = As<SelectNode>(node);
      WARP_ASSIGN_OR_RETURN(Value test, Evaluate(*select.test, scope));
      if (!Truthy(test)) return Value();
      return Evaluate(*select.lhs, scope);
    }
    case NodeKind::kTernary: {
      const auto& ternary = As<TernaryNode>(node);
      WARP_ASSIGN_OR_RETURN(Value condition, Evaluate(*ternary.condition, scope));
      return Evaluate(Truthy(condition) ? *ternary.if_true : *ternary.if_false, scope);
    }
    case NodeKind::kSlice:
    case NodeKind::kKeywordArg:
    case NodeKind::kSpread:
    case NodeKind::kKeywordSpread:
      return Error("this expression is only valid inside [] or a call");
    default:
      return EvaluateLiteral(node, scope);
  }
}

absl::StatusOr<Value> Interpreter::EvaluateLiteral(const Node& node, const ScopePtr& scope) {
  switch (node.kind) {
    case NodeKind::kIntLiteral: return Value::Int(As<NumberNode>(node).value);
    case NodeKind::kFloatLiteral: return Value::Float(As<NumberNode>(node).value);
    case NodeKind::kStringLiteral: return Value::String(As<StringNode>(node).value);
    case NodeKind::kArrayLiteral:
    case NodeKind::kTupleLiteral: {
      std::vector<Value> items;
      for (const NodePtr& item : As<ListNode>(node).items) {
        WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*item, scope));
        items.push_back(std::move(value));
      }
      return node.kind == NodeKind::kTupleLiteral ? Value::Tuple(std::move(items)) : Value::Array(std::move(items));
    }
    case NodeKind::kObjectLiteral: {
      ObjectMap map;
      for (const auto& [key_node, value_node] : As<ObjectNode>(node).entries) {
        WARP_ASSIGN_OR_RETURN(Value key, Evaluate(*key_node, scope));
        if (!key.is(Type::kString)) return Error(Cat("dict keys must be strings, got ", TypeName(key)));
        WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*value_node, scope));
        map.Set(key.string(), std::move(value));
      }
      return Value::Object(std::move(map));
    }
    default:
      return Error("unexpected node in an expression");
  }
}

absl::StatusOr<Value> Interpreter::EvaluateBinary(const BinaryNode& node, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(Value left, Evaluate(*node.left, scope));
  if (node.op == "and") return Truthy(left) ? Evaluate(*node.right, scope) : left;
  if (node.op == "or") return Truthy(left) ? left : Evaluate(*node.right, scope);
  WARP_ASSIGN_OR_RETURN(Value right, Evaluate(*node.right, scope));
  return ApplyBinary(node.op, left, right);
}

absl::StatusOr<Value> Interpreter::EvaluateTest(const TestNode& node, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(Value operand, Evaluate(*node.operand, scope));
  Value argument;
  if (node.argument != nullptr) {
    WARP_ASSIGN_OR_RETURN(argument, Evaluate(*node.argument, scope));
  }
  WARP_ASSIGN_OR_RETURN(bool result, RunTest(node.name, operand, argument));
  return Value::Bool(node.negate ? !result : result);
}

// Positional values first (with *spread), then keyword values (with **spread).
absl::StatusOr<std::pair<Args, ObjectMap>> Interpreter::EvaluateArguments(const NodeList& args,
                                                                          const ScopePtr& scope) {
  Args positional;
  ObjectMap keywords;
  for (const NodePtr& arg : args) {
    if (arg->kind == NodeKind::kKeywordArg || arg->kind == NodeKind::kKeywordSpread) continue;
    if (arg->kind == NodeKind::kSpread) {
      WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*As<SpreadNode>(*arg).operand, scope));
      if (!value.is(Type::kArray)) return Error(Cat("cannot unpack a ", TypeName(value), " with *"));
      positional.insert(positional.end(), value.array().begin(), value.array().end());
      continue;
    }
    WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*arg, scope));
    positional.push_back(std::move(value));
  }
  auto add = [&](const std::string& key, Value value) -> absl::Status {
    if (keywords.Find(key) != nullptr) return Error(Cat("got multiple values for keyword argument '", key, "'"));
    keywords.Set(key, std::move(value));
    return absl::OkStatus();
  };
  for (const NodePtr& arg : args) {
    if (arg->kind == NodeKind::kKeywordArg) {
      const auto& kw = As<KeywordArgNode>(*arg);
      WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*kw.value, scope));
      WARP_RETURN_IF_ERROR(add(kw.key, std::move(value)));
    } else if (arg->kind == NodeKind::kKeywordSpread) {
      WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*As<SpreadNode>(*arg).operand, scope));
      if (!value.is(Type::kObject)) return Error(Cat("argument after ** must be a dict, not ", TypeName(value)));
      for (const auto& [key, item] : value.object()) WARP_RETURN_IF_ERROR(add(key, item));
    }
  }
  return std::make_pair(std::move(positional), std::move(keywords));
}

absl::StatusOr<Value> Interpreter::EvaluateCall(const CallNode& node, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(auto evaluated, EvaluateArguments(node.args, scope));
  auto& [args, kwargs] = evaluated;
  if (!kwargs.empty()) args.push_back(Value::Kwargs(std::move(kwargs)));
  WARP_ASSIGN_OR_RETURN(Value callee, Evaluate(*node.callee, scope));
  if (!callee.is(Type::kFunction)) {
    if (node.callee->kind == NodeKind::kMember && !As<MemberNode>(*node.callee).computed) {
      const auto& member = As<MemberNode>(*node.callee);
      WARP_ASSIGN_OR_RETURN(Value object, Evaluate(*member.object, scope));
      const std::string name = member.property->kind == NodeKind::kIdentifier
                                   ? As<IdentifierNode>(*member.property).name
                                   : "?";
      return Error(Cat("unknown method '", name, "' of ", TypeName(object)));
    }
    if (node.callee->kind == NodeKind::kIdentifier) {
      return Error(Cat("'", As<IdentifierNode>(*node.callee).name, "' is not a function (it is ",
                                TypeName(callee), ")"));
    }
    return Error(Cat("cannot call a ", TypeName(callee)));
  }
  return callee.function()(std::move(args), scope);
}

absl::StatusOr<Value> Interpreter::EvaluateSlice(const Value& object, const SliceNode& node, const ScopePtr& scope) {
  if (!object.is(Type::kArray) && !object.is(Type::kString)) {
    return Error(Cat("cannot slice a ", TypeName(object)));
  }
  WARP_ASSIGN_OR_RETURN(Value start, EvaluateOptional(node.start.get(), scope));
  WARP_ASSIGN_OR_RETURN(Value stop, EvaluateOptional(node.stop.get(), scope));
  WARP_ASSIGN_OR_RETURN(Value step, EvaluateOptional(node.step.get(), scope));
  for (const Value* part : {&start, &stop, &step}) {
    if (!part->is(Type::kInt) && !part->is(Type::kUndefined)) {
      return Error(Cat("slice indices must be ints, got ", TypeName(*part)));
    }
  }
  if (object.is(Type::kArray)) {
    std::vector<Value> items;
    for (size_t i : SliceIndices(static_cast<double>(object.array().size()), start, stop, step)) {
      items.push_back(object.array()[i]);
    }
    return Value::Array(std::move(items));
  }
  const std::vector<std::string> chars = CodePoints(object.string());
  std::string out;
  for (size_t i : SliceIndices(static_cast<double>(chars.size()), start, stop, step)) out += chars[i];
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Interpreter::EvaluateMember(const MemberNode& node, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(Value object, Evaluate(*node.object, scope));
  if (object.is(Type::kUndefined)) {  // Jinja2's Undefined raises on any attribute or item
    return Error("an attribute or item of an undefined value (jinja2.exceptions.UndefinedError)");
  }
  Value property;
  if (node.computed) {
    if (node.property->kind == NodeKind::kSlice) return EvaluateSlice(object, As<SliceNode>(*node.property), scope);
    WARP_ASSIGN_OR_RETURN(property, Evaluate(*node.property, scope));
  } else if (node.property->kind == NodeKind::kIntLiteral) {
    property = Value::Int(As<NumberNode>(*node.property).value);
  } else {
    property = Value::String(As<IdentifierNode>(*node.property).name);
  }
  if (object.is_mapping()) {
    if (!property.is(Type::kString)) return Error(Cat("cannot index a ", TypeName(object), " with a ", TypeName(property)));
    if (const Value* found = object.object().Find(property.string())) return *found;
    return object.is(Type::kObject) ? BuiltinMember(object, property.string()) : Value();
  }
  if (object.is(Type::kArray) || object.is(Type::kString)) {
    if (property.is(Type::kInt)) {
      if (object.is(Type::kString)) {
        std::optional<std::string> c = Utf16At(object.string(), property.number());
        return c.has_value() ? Value::String(*std::move(c)) : Value();
      }
      double index = property.number();
      const auto size = static_cast<double>(object.array().size());
      if (index < 0) index += size;
      if (index < 0 || index >= size) return Value();
      return object.array()[static_cast<size_t>(index)];
    }
    if (property.is(Type::kString)) return BuiltinMember(object, property.string());
    return Error(Cat("cannot index a ", TypeName(object), " with a ", TypeName(property)));
  }
  if (!property.is(Type::kString)) return Error(Cat("cannot index a ", TypeName(object), " with a ", TypeName(property)));
  return Value();  // attributes of numbers, none, undefined: undefined
}

}  // namespace warp::chat
