// Statement execution of the Interpreter: blocks, if, for, set, macros,
// call blocks and filter blocks.

#include "computed/chat/interpreter.h"

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

// Nested macro calls allowed (a few KiB of stack each); deeper recursion fails
// instead of exhausting the stack of a server thread. Templates recurse over
// JSON schemas, a handful of levels deep.
constexpr int kMaxCallDepth = 100;

absl::Status Error(std::string_view message) { return absl::InvalidArgumentError(std::string(message)); }

}  // namespace

absl::StatusOr<std::string> Interpreter::Run(const NodeList& program, const ScopePtr& globals) {
  WARP_ASSIGN_OR_RETURN(std::string out, ExecBlock(program, globals));
  if (flow_ != Flow::kNormal) {
    return ErrorAt(absl::StatusCode::kInvalidArgument, flow_pos_,
                   flow_ == Flow::kBreak ? "{% break %} outside of a loop" : "{% continue %} outside of a loop");
  }
  return out;
}

// Concatenates the statements' text; undefined prints nothing. A pending
// break/continue ends the block and keeps the text rendered before it, as
// Python Jinja2's generated code has already yielded it.
absl::StatusOr<std::string> Interpreter::ExecBlock(const NodeList& block, const ScopePtr& scope) {
  std::string out;
  for (const NodePtr& statement : block) {
    if (flow_ != Flow::kNormal) break;
    WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*statement, scope));
    if (value.is(Value::Type::kUndefined)) continue;  // none prints "None", as in Python
    absl::StatusOr<std::string> text = ToDisplayString(value);
    if (!text.ok()) return WithPosition(text.status(), statement->pos);
    if (text->size() > kMaxRenderBytes - out.size()) {
      return ErrorAt(absl::StatusCode::kResourceExhausted, statement->pos,
                     Cat("the output exceeds ", kMaxRenderBytes >> 20, " MiB"));
    }
    out += *text;
  }
  return out;
}

absl::StatusOr<Value> Interpreter::ExecIf(const IfNode& node, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(Value test, Evaluate(*node.test, scope));
  WARP_ASSIGN_OR_RETURN(std::string out, ExecBlock(Truthy(test) ? node.body : node.alternate, scope));
  return Value::String(std::move(out));
}

absl::Status Interpreter::BindTarget(const Node& target, const Value& item, Scope& scope) {
  if (target.kind == NodeKind::kIdentifier) {
    scope.Set(As<IdentifierNode>(target).name, item);
    return absl::OkStatus();
  }
  const NodeList& names = As<ListNode>(target).items;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i]->kind != NodeKind::kIdentifier) return Error("loop variables must be names");
    scope.Set(As<IdentifierNode>(*names[i]).name, item.array()[i]);
  }
  return absl::OkStatus();
}

absl::StatusOr<Value> Interpreter::ExecFor(const ForNode& node, const ScopePtr& outer) {
  auto scope = std::make_shared<Scope>(outer);
  const Node* test = nullptr;
  const Node* iterable_node = node.iterable.get();
  if (iterable_node->kind == NodeKind::kSelect) {
    test = As<SelectNode>(*iterable_node).test.get();
    iterable_node = As<SelectNode>(*iterable_node).lhs.get();
  }
  WARP_ASSIGN_OR_RETURN(Value iterable, Evaluate(*iterable_node, scope));
  std::vector<Value> all;
  if (iterable.is(Type::kArray)) {
    all = iterable.array();
  } else if (iterable.is(Type::kObject)) {
    for (const auto& entry : iterable.object()) all.push_back(Value::String(entry.first));
  } else if (iterable.is(Type::kString)) {  // Python iterates a str by code point
    for (std::string& c : CodePoints(iterable.string())) all.push_back(Value::String(std::move(c)));
  } else if (iterable.is(Type::kUndefined)) {  // Jinja2's Undefined iterates as empty
  } else {
    return ErrorAt(absl::StatusCode::kInvalidArgument, iterable_node->pos,
                   Cat("cannot iterate over a ", TypeName(iterable)));
  }
  std::vector<Value> items;
  for (const Value& item : all) {
    if (node.target->kind == NodeKind::kTupleLiteral) {
      const size_t wanted = As<ListNode>(*node.target).items.size();
      if (!item.is(Type::kArray)) return Error(Cat("cannot unpack a ", TypeName(item)));
      if (item.array().size() != wanted) {
        return Error(Cat("too ", wanted > item.array().size() ? "few" : "many", " items to unpack"));
      }
    }
    if (test != nullptr) {
      auto loop_scope = std::make_shared<Scope>(scope);
      WARP_RETURN_IF_ERROR(BindTarget(*node.target, item, *loop_scope));
      WARP_ASSIGN_OR_RETURN(Value keep, Evaluate(*test, loop_scope));
      if (!Truthy(keep)) continue;
    }
    items.push_back(item);
  }
  std::string out;
  bool no_iteration = true;
  const double length = static_cast<double>(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const double index = static_cast<double>(i);
    ObjectMap loop;
    loop.Set("index", Value::Int(index + 1));
    loop.Set("index0", Value::Int(index));
    loop.Set("revindex", Value::Int(length - index));
    loop.Set("revindex0", Value::Int(length - index - 1));
    loop.Set("first", Value::Bool(i == 0));
    loop.Set("last", Value::Bool(i + 1 == items.size()));
    loop.Set("length", Value::Int(length));
    loop.Set("previtem", i > 0 ? items[i - 1] : Value());
    loop.Set("nextitem", i + 1 < items.size() ? items[i + 1] : Value());
    scope->Set("loop", Value::Object(std::move(loop)));
    WARP_RETURN_IF_ERROR(BindTarget(*node.target, items[i], *scope));
    WARP_ASSIGN_OR_RETURN(std::string body, ExecBlock(node.body, scope));
    out += body;
    // As in Python Jinja2, the else block runs unless some iteration reached
    // the end of the body.
    if (flow_ != Flow::kNormal) {
      const bool stop = flow_ == Flow::kBreak;
      flow_ = Flow::kNormal;
      if (stop) break;
      continue;
    }
    no_iteration = false;
  }
  if (no_iteration) {
    WARP_ASSIGN_OR_RETURN(std::string else_out, ExecBlock(node.else_body, scope));
    out += else_out;
  }
  return Value::String(std::move(out));
}

absl::StatusOr<Value> Interpreter::ExecSet(const SetNode& node, const ScopePtr& scope) {
  Value rhs;
  if (node.value != nullptr) {
    WARP_ASSIGN_OR_RETURN(rhs, Evaluate(*node.value, scope));
  } else {
    WARP_ASSIGN_OR_RETURN(std::string text, ExecBlock(node.body, scope));
    if (flow_ != Flow::kNormal) return Value();
    rhs = Value::String(std::move(text));
  }
  const Node& target = *node.target;
  if (target.kind == NodeKind::kIdentifier) {
    scope->Set(As<IdentifierNode>(target).name, std::move(rhs));
  } else if (target.kind == NodeKind::kTupleLiteral) {
    const NodeList& names = As<ListNode>(target).items;
    if (!rhs.is(Type::kArray)) return Error(Cat("cannot unpack a ", TypeName(rhs), " in set"));
    if (rhs.array().size() != names.size()) {
      return Error(Cat("too ", names.size() > rhs.array().size() ? "few" : "many", " items to unpack in set"));
    }
    for (size_t i = 0; i < names.size(); ++i) {
      if (names[i]->kind != NodeKind::kIdentifier) return Error("can only unpack into names in set");
      scope->Set(As<IdentifierNode>(*names[i]).name, rhs.array()[i]);
    }
  } else if (target.kind == NodeKind::kMember) {
    const auto& member = As<MemberNode>(target);
    WARP_ASSIGN_OR_RETURN(Value object, Evaluate(*member.object, scope));
    if (!object.is(Type::kNamespace)) return Error(Cat("cannot set an attribute of a ", TypeName(object), " (only of a namespace)"));
    if (member.property->kind != NodeKind::kIdentifier) return Error("can only set a namespace attribute by name");
    object.mutable_namespace().Set(As<IdentifierNode>(*member.property).name, std::move(rhs));
  } else {
    return Error("invalid target of set");
  }
  return Value();
}

// Binds a macro's parameters in `scope`: positional, then keyword, then
// defaults (evaluated last, in the macro scope). Extra arguments go to
// varargs/kwargs when the body uses them, else they are an error.
absl::Status Interpreter::BindArgs(std::string_view macro_name, const std::vector<Param>& params, bool uses_varargs,
                                   bool uses_kwargs, Args args, const ScopePtr& scope) {
  ObjectMap keywords;
  if (!args.empty() && args.back().is_kwargs()) {
    keywords = args.back().object();
    args.pop_back();
  }
  std::vector<const Param*> pending_defaults;
  for (size_t i = 0; i < params.size(); ++i) {
    Value value;
    if (i < args.size()) {
      value = args[i];
    } else if (const Value* found = keywords.Find(params[i].name)) {
      value = *found;
      keywords.Erase(params[i].name);
    } else if (params[i].default_value != nullptr) {
      pending_defaults.push_back(&params[i]);
    }
    scope->Set(params[i].name, std::move(value));
  }
  if (uses_kwargs) {
    scope->Set("kwargs", Value::Object(keywords));
  } else if (!keywords.empty()) {
    return Error(Cat("macro ", macro_name, " takes no keyword argument '", keywords.begin()->first, "'"));
  }
  if (uses_varargs) {
    std::vector<Value> rest;
    for (size_t i = params.size(); i < args.size(); ++i) rest.push_back(args[i]);
    scope->Set("varargs", Value::Tuple(std::move(rest)));  // a Python tuple
  } else if (args.size() > params.size()) {
    return Error(Cat("macro ", macro_name, " takes not more than ", params.size(), " argument(s)"));
  }
  for (const Param* param : pending_defaults) {
    WARP_ASSIGN_OR_RETURN(Value value, Evaluate(*param->default_value, scope));
    scope->Set(param->name, std::move(value));
  }
  return absl::OkStatus();
}

// A macro or caller body; a break/continue may not escape it.
absl::StatusOr<Value> Interpreter::RunBody(const NodeList& body, const ScopePtr& scope, std::string_view what) {
  if (call_depth_ >= kMaxCallDepth) return Error(Cat("macro calls nest deeper than ", kMaxCallDepth));
  ++call_depth_;
  absl::StatusOr<std::string> out = ExecBlock(body, scope);
  --call_depth_;
  if (!out.ok()) return out.status();
  if (flow_ != Flow::kNormal) {
    flow_ = Flow::kNormal;
    return ErrorAt(absl::StatusCode::kInvalidArgument, flow_pos_, Cat("break/continue outside of a loop in ", what));
  }
  return Value::String(*std::move(out));
}

absl::StatusOr<Value> Interpreter::ExecMacro(const MacroNode& node, const ScopePtr& scope) {
  const MacroNode* macro = &node;
  scope->Set(node.name, Value::Function([this, macro](Args args, const ScopePtr& caller) -> absl::StatusOr<Value> {
    auto macro_scope = std::make_shared<Scope>(caller);
    const std::string name = Cat("'", macro->name, "'");
    WARP_RETURN_IF_ERROR(
        BindArgs(name, macro->params, macro->uses_varargs, macro->uses_kwargs, std::move(args), macro_scope));
    return RunBody(macro->body, macro_scope, Cat("macro ", name));
  }));
  return Value();
}

absl::StatusOr<Value> Interpreter::ExecCallBlock(const CallBlockNode& node, const ScopePtr& scope) {
  const CallBlockNode* block = &node;
  // Weak: a template may store caller() in a namespace of `scope` (a cycle).
  std::weak_ptr<Scope> weak_scope = scope;
  Value caller_fn = Value::Function([this, block, weak_scope](Args args, const ScopePtr&) -> absl::StatusOr<Value> {
    ScopePtr defining_scope = weak_scope.lock();
    if (defining_scope == nullptr) return Error("caller() used after its {% call %} block ended");
    auto block_scope = std::make_shared<Scope>(defining_scope);
    WARP_RETURN_IF_ERROR(BindArgs("None", block->caller_params, block->uses_varargs, block->uses_kwargs,
                                  std::move(args), block_scope));
    return RunBody(block->body, block_scope, "a call block");
  });
  const auto& call = As<CallNode>(*node.call);
  WARP_ASSIGN_OR_RETURN(auto evaluated, EvaluateArguments(call.args, scope));
  auto& [args, kwargs] = evaluated;
  args.push_back(Value::Kwargs(std::move(kwargs)));
  WARP_ASSIGN_OR_RETURN(Value callee, Evaluate(*call.callee, scope));
  if (!callee.is(Type::kFunction)) return Error(Cat("{% call %} needs a macro, got ", TypeName(callee)));
  auto call_scope = std::make_shared<Scope>(scope);
  call_scope->Set("caller", std::move(caller_fn));
  return callee.function()(std::move(args), call_scope);
}

absl::StatusOr<Value> Interpreter::ExecFilterBlock(const FilterBlockNode& node, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(std::string text, ExecBlock(node.body, scope));
  if (flow_ != Flow::kNormal) return Value();
  return ApplyFilter(Value::String(std::move(text)), *node.filter, scope);
}

}  // namespace warp::chat
