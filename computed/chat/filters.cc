// Filters of the Interpreter, dispatched as @huggingface/jinja does: by name
// and operand type, separately for `x|f` and `x|f(args)` (so `x|f` and
// `x|f()` do not always both exist). Supported:
//   x|f     safe tojson default; list: list first last length reverse sort join string
//           unique select reject; str: length upper lower title capitalize trim indent join
//           string int float list; numbers: abs int float string; dict: items
//           length get keys values dictsort; bool: bool int float string
//   x|f()   tojson(indent, ensure_ascii, separators) join(sep) int(default)
//           float(default) default(value, boolean); list: sort(reverse,
//           case_sensitive, attribute) selectattr rejectattr select(test, arg)
//           reject(test, arg) map(attribute=) map('filter', args);
//           str: indent(width, first, blank) replace(old, new, count);
//           dict: get keys values items dictsort
// and the Jinja2 builtins the reference lacks (python_filters.cc).

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/interpreter.h"
#include "computed/chat/js_format.h"
#include "computed/chat/parser_internal.h"
#include "computed/chat/py_format.h"
#include "computed/chat/strings.h"
#include "computed/chat/to_json.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

absl::Status Error(std::string_view message) { return absl::InvalidArgumentError(std::string(message)); }

absl::Status NoSuchFilter(std::string_view name, const Value& operand) {
  return Error(Cat("filter '", name, "' does not apply to a ", TypeName(operand)));
}

// JavaScript truthiness of the underlying value (objects are always true).
bool JsTruthy(const Value& v) {
  if (v.is(Type::kArray) || v.is_mapping() || v.is(Type::kFunction)) return true;
  return Truthy(v);
}

// str(v): Jinja2's join prints none as "None", undefined as "".
absl::StatusOr<std::string> JoinString(const Value& v) { return ConcatString(v); }

absl::StatusOr<Value> Join(const std::vector<Value>& items, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += separator;
    WARP_ASSIGN_OR_RETURN(std::string text, JoinString(items[i]));
    out += text;
  }
  return Value::String(std::move(out));
}

std::string Indent(const std::string& text, size_t width, bool first, bool blank) {
  const std::vector<std::string_view> lines = SplitString(text, "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += '\n';
    if (!((!first && i == 0) || (!blank && lines[i].empty()))) out += std::string(width, ' ');
    out += lines[i];
  }
  return out;
}

absl::StatusOr<Value> CallMethod(const Value& operand, std::string_view name, Args args) {
  const Value method = BuiltinMember(operand, name);
  if (!method.is(Type::kFunction)) return method;
  return method.function()(std::move(args), nullptr);
}

absl::StatusOr<Value> Unique(const Value& operand) {
  std::vector<Value> out;
  for (const Value& item : operand.array()) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Value& kept) {
      return PyEquals(kept, item) || (kept.is_number() && item.is_number() && std::isnan(kept.number()) &&
                                          std::isnan(item.number()));
    });
    if (!seen) out.push_back(item);
  }
  return Value::Array(std::move(out));
}

absl::StatusOr<Value> ListFilter(const Value& operand, std::string_view name) {
  const std::vector<Value>& items = operand.array();
  if (name == "list") return operand;
  // The reference yields a JavaScript undefined that breaks whatever uses it.
  if ((name == "first" || name == "last") && items.empty()) return Error(Cat("filter '", name, "' of an empty list"));
  if (name == "first") return items.front();
  if (name == "last") return items.back();
  if (name == "length") return Value::Int(static_cast<double>(items.size()));
  if (name == "reverse") return Value::Array(std::vector<Value>(items.rbegin(), items.rend()));
  if (name == "sort") {
    WARP_ASSIGN_OR_RETURN(std::vector<Value> sorted, SortValues(items, items, false, false));
    return Value::Array(std::move(sorted));
  }
  if (name == "join") return Join(items, "");
  if (name == "unique") return Unique(operand);
  if (name == "select" || name == "reject") {  // Jinja2: the items that are (not) truthy
    std::vector<Value> kept;
    for (const Value& item : items) {
      if (Truthy(item) == (name == "select")) kept.push_back(item);
    }
    return Value::Array(std::move(kept));
  }
  return NoSuchFilter(name, operand);
}

// Jinja2's int filter: int(s) of a string, else int(float(s)), else
// `fallback`; numbers truncate toward zero, as Python's int() does.
absl::StatusOr<Value> IntFilter(const Value& operand, const Value& fallback) {
  double value = 0;
  if (operand.is(Type::kString)) {
    std::optional<double> parsed = ParsePyInt(operand.string());
    if (!parsed.has_value()) parsed = ParsePyFloat(operand.string());
    if (!parsed.has_value() || std::isnan(*parsed)) return fallback;
    value = *parsed;
  } else if (operand.is_number() || operand.is(Type::kBool)) {
    value = operand.number();
  } else {
    return NoSuchFilter("int", operand);
  }
  if (std::isinf(value)) return Error("int: cannot convert float infinity to integer");
  return Value::Int(std::trunc(value));
}

// Jinja2's float filter: float(s) of a string, else `fallback`.
absl::StatusOr<Value> FloatFilter(const Value& operand, const Value& fallback) {
  if (operand.is(Type::kString)) {
    const std::optional<double> parsed = ParsePyFloat(operand.string());
    return parsed.has_value() ? Value::Float(*parsed) : fallback;
  }
  if (operand.is_number() || operand.is(Type::kBool)) return Value::Float(operand.number());
  return NoSuchFilter("float", operand);
}

absl::StatusOr<Value> StringFilter(const Value& operand, std::string_view name) {
  const std::string& s = operand.string();
  if (name == "length" || name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    return CallMethod(operand, name, {});
  }
  if (name == "trim") return Value::String(PyStrip(s, nullptr, true, true));
  if (name == "indent") return Value::String(Indent(s, 4, false, false));
  if (name == "join" || name == "string") return operand;
  if (name == "list") {  // Python's list(str): its characters
    std::vector<Value> chars;
    for (std::string& c : CodePoints(s)) chars.push_back(Value::String(std::move(c)));
    return Value::Array(std::move(chars));
  }
  if (name == "int") return IntFilter(operand, Value::Int(0));
  if (name == "float") return FloatFilter(operand, Value::Float(0));
  return NoSuchFilter(name, operand);
}

absl::StatusOr<Value> SimpleFilter(const Value& operand, std::string_view name) {
  if (name == "safe") return operand;
  if (IsPythonFilter(name, /*with_arguments=*/false)) return ApplyPythonFilter(operand, name, {}, {});
  if (name == "default") return operand.is(Type::kUndefined) ? Value::String("") : operand;
  if (name == "string" && !operand.is(Type::kString)) {  // str(): "True", "None", "['a']", "" for undefined
    WARP_ASSIGN_OR_RETURN(std::string text, ToDisplayString(operand));
    return Value::String(std::move(text));
  }
  if (name == "tojson") {
    WARP_ASSIGN_OR_RETURN(std::string json, ToJson(operand, JsonOptions{}));
    return Value::String(std::move(json));
  }
  switch (operand.type()) {
    case Type::kArray:
      return ListFilter(operand, name);
    case Type::kString:
      return StringFilter(operand, name);
    case Type::kInt:
    case Type::kFloat:
      if (name == "abs") return operand.is(Type::kInt) ? Value::Int(std::fabs(operand.number())) : Value::Float(std::fabs(operand.number()));
      if (name == "int") return IntFilter(operand, Value::Int(0));
      if (name == "float") return FloatFilter(operand, Value::Float(0));
      if (name == "string") return Value::String(*ToDisplayString(operand));
      return NoSuchFilter(name, operand);
    case Type::kObject:
      if (name == "length") return Value::Int(static_cast<double>(operand.object().size()));
      if (name == "list") return CallMethod(operand, "keys", {});  // Python's list(dict)
      if (IsDictMethod(name)) return CallMethod(operand, name, {});
      return NoSuchFilter(name, operand);
    case Type::kBool:
      if (name == "bool") return operand;
      if (name == "int") return Value::Int(operand.boolean() ? 1 : 0);
      if (name == "float") return Value::Float(operand.boolean() ? 1 : 0);
      if (name == "string") return Value::String(operand.boolean() ? "true" : "false");
      return NoSuchFilter(name, operand);
    default:
      return NoSuchFilter(name, operand);
  }
}


}  // namespace

// args[index], else kwargs[key], else `fallback`.
Value FilterArgument(const Args& args, const ObjectMap& kwargs, size_t index, std::string_view key, Value fallback) {
  if (index < args.size()) return args[index];
  if (const Value* found = kwargs.Find(key)) return *found;
  return fallback;
}

// "a.b.0": keys of dicts/namespaces and list indices (getAttributeValue).
Value AttributePath(const Value& item, const std::string& path) {
  Value value = item;
  for (std::string_view part : SplitString(path, ".")) {
    if (value.is_mapping()) {
      const Value* found = value.object().Find(part);
      value = found != nullptr ? *found : Value();
    } else if (value.is(Type::kArray)) {
      const double index = ParseJsInt(part);
      if (std::isnan(index) || index < 0 || index >= static_cast<double>(value.array().size())) return Value();
      value = Value(value.array()[static_cast<size_t>(index)]);
    } else {
      return Value();
    }
  }
  return value;
}

bool IsKnownFilter(std::string_view name, bool with_arguments) {
  static const std::set<std::string_view> kSimple = {
      "safe", "tojson", "list", "first", "last", "length", "reverse", "sort", "join", "string", "unique",
      "upper", "lower", "title", "capitalize", "trim", "indent", "int", "float", "abs", "items", "bool",
      "get", "keys", "values", "dictsort", "select", "reject", "default"};
  static const std::set<std::string_view> kWithArguments = {
      "tojson", "join", "int", "float", "default", "sort", "selectattr", "rejectattr", "map", "indent",
      "replace", "trim", "get", "items", "keys", "values", "dictsort", "select", "reject"};
  if (IsPythonFilter(name, with_arguments)) return true;
  return with_arguments ? kWithArguments.count(name) > 0 : kSimple.count(name) > 0;
}

absl::StatusOr<Value> Interpreter::ApplyFilter(const Value& operand, const Node& filter, const ScopePtr& scope) {
  absl::StatusOr<Value> result = filter.kind == NodeKind::kCall
                                     ? ApplyCallFilter(operand, As<CallNode>(filter), scope)
                                     : SimpleFilter(operand, As<IdentifierNode>(filter).name);
  if (!result.ok()) return WithPosition(result.status(), filter.pos);
  return result;
}

absl::StatusOr<Value> Interpreter::ApplyTojson(const Value& operand, const CallNode& call, const ScopePtr& scope) {
  WARP_ASSIGN_OR_RETURN(auto evaluated, EvaluateArguments(call.args, scope));
  // transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
  const Args& args = evaluated.first;
  const ObjectMap& kwargs = evaluated.second;
  JsonOptions options;
  const Value indent = FilterArgument(args, kwargs, 1, "indent", Value::None());
  if (indent.is(Type::kInt)) {
    if (indent.number() > 1000) return Error("tojson: indent must be at most 1000");
    options.indent = std::string(static_cast<size_t>(std::max(indent.number(), 0.0)), ' ');
  } else if (indent.is(Type::kString)) {
    options.indent = indent.string();
  } else if (!indent.is(Type::kNone)) {
    return Error("tojson: indent must be an int or a string");
  }
  const Value ensure_ascii = FilterArgument(args, kwargs, 0, "ensure_ascii", Value::Bool(false));
  options.ensure_ascii = Truthy(ensure_ascii);
  options.sort_keys = Truthy(FilterArgument(args, kwargs, 3, "sort_keys", Value::Bool(false)));
  const Value separators = FilterArgument(args, kwargs, 2, "separators", Value::None());
  if (separators.is(Type::kArray)) {
    const std::vector<Value>& parts = separators.array();
    if (parts.size() != 2 || !parts[0].is(Type::kString) || !parts[1].is(Type::kString)) {
      return Error("tojson: separators must be a tuple of two strings");
    }
    options.separators = std::make_pair(parts[0].string(), parts[1].string());
  } else if (!separators.is(Type::kNone)) {
    return Error("tojson: separators must be a tuple of two strings");
  }
  WARP_ASSIGN_OR_RETURN(std::string json, ToJson(operand, options));
  return Value::String(std::move(json));
}

absl::StatusOr<Value> Interpreter::ApplyCallFilter(const Value& operand, const CallNode& call, const ScopePtr& scope) {
  const std::string& name = As<IdentifierNode>(*call.callee).name;
  if (name == "tojson") return ApplyTojson(operand, call, scope);
  if (operand.is(Type::kString) && name == "sort") {  // Python sorts a str's characters into a list
    std::vector<Value> chars;
    for (std::string& c : CodePoints(operand.string())) chars.push_back(Value::String(std::move(c)));
    return ApplyListCallFilter(Value::Array(std::move(chars)), name, call, scope);
  }
  if (operand.is(Type::kArray) && (name == "sort" || name == "selectattr" || name == "rejectattr" ||
                                    name == "select" || name == "reject" || name == "map")) {
    return ApplyListCallFilter(operand, name, call, scope);
  }
  WARP_ASSIGN_OR_RETURN(auto evaluated, EvaluateArguments(call.args, scope));
  auto& [args, kwargs] = evaluated;
  if (IsPythonFilter(name, /*with_arguments=*/true)) return ApplyPythonFilter(operand, name, args, kwargs);
  if (name == "join") {
    const Value separator = FilterArgument(args, kwargs, 0, "separator", Value::String(""));
    if (!separator.is(Type::kString)) return Error("join: separator must be a string");
    if (operand.is(Type::kString)) {
      std::vector<Value> chars;
      for (std::string& c : CodePoints(operand.string())) chars.push_back(Value::String(std::move(c)));
      return Join(chars, separator.string());
    }
    if (operand.is(Type::kArray)) return Join(operand.array(), separator.string());
    return NoSuchFilter(name, operand);
  }
  if (name == "int" || name == "float") {
    const bool is_int = name == "int";
    const Value fallback = FilterArgument(args, kwargs, 0, "default", is_int ? Value::Int(0) : Value::Float(0));
    return is_int ? IntFilter(operand, fallback) : FloatFilter(operand, fallback);
  }
  if (name == "default") {
    const Value fallback = args.empty() ? Value::String("") : args[0];
    const Value boolean = FilterArgument(args, kwargs, 1, "boolean", Value::Bool(false));
    if (!boolean.is(Type::kBool)) return Error("default: the boolean flag must be a boolean");
    if (operand.is(Type::kUndefined) || (boolean.boolean() && !Truthy(operand))) return fallback;
    return operand;
  }
  if (operand.is(Type::kString) && name == "indent") {
    const Value width = FilterArgument(args, kwargs, 0, "width", Value::Int(4));
    if (!width.is(Type::kInt) || width.number() < 0) return Error("indent: width must be a non-negative int");
    const bool first = JsTruthy(FilterArgument(args, kwargs, 1, "first", Value::Bool(false)));
    const bool blank = JsTruthy(FilterArgument(args, kwargs, 2, "blank", Value::Bool(false)));
    return Value::String(Indent(operand.string(), static_cast<size_t>(width.number()), first, blank));
  }
  if (operand.is(Type::kString) && name == "trim") {  // trim(chars), Python's str.strip(chars)
    const Value chars = FilterArgument(args, kwargs, 0, "chars", Value::None());
    if (chars.is_none_or_undefined()) return Value::String(PyStrip(operand.string(), nullptr, true, true));
    if (!chars.is(Type::kString)) return Error("trim: chars must be a string");
    return Value::String(PyStrip(operand.string(), &chars.string(), true, true));
  }
  if (operand.is(Type::kString) && name == "replace") {
    args.push_back(Value::Kwargs(std::move(kwargs)));
    return CallMethod(operand, "replace", std::move(args));
  }
  if (operand.is(Type::kObject) && IsDictMethod(name)) {
    if (!kwargs.empty()) args.push_back(Value::Kwargs(std::move(kwargs)));
    return CallMethod(operand, name, std::move(args));
  }
  return NoSuchFilter(name, operand);
}

absl::StatusOr<Value> Interpreter::ApplyListCallFilter(const Value& operand, std::string_view name,
                                                      const CallNode& call, const ScopePtr& scope) {
  const std::vector<Value>& items = operand.array();
  if (name == "selectattr" || name == "rejectattr") {
    for (const Value& item : items) {
      if (!item.is_mapping()) return Error(Cat(name, " applies to a list of dicts, got a ", TypeName(item)));
    }
    std::vector<Value> args;
    for (const NodePtr& arg : call.args) {
      if (arg->kind != NodeKind::kStringLiteral) return Error(Cat("the arguments of ", name, " must be string literals"));
      args.push_back(Value::String(As<StringNode>(*arg).value));
    }
    if (args.empty()) return Error(Cat(name, " needs an attribute name"));
    std::vector<Value> kept;
    for (const Value& item : items) {
      const Value* attr = item.object().Find(args[0].string());
      bool result = false;
      if (attr != nullptr) {
        if (args.size() > 1) {
          WARP_ASSIGN_OR_RETURN(result, RunTest(args[1].string(), *attr, args.size() > 2 ? args[2] : Value()));
        } else {
          result = Truthy(*attr);
        }
      }
      if (result == (name == "selectattr")) kept.push_back(item);
    }
    return Value::Array(std::move(kept));
  }
  WARP_ASSIGN_OR_RETURN(auto evaluated, EvaluateArguments(call.args, scope));
  const auto& [args, kwargs] = evaluated;
  if (name == "select" || name == "reject") {  // Jinja2: the items that pass (fail) the test
    if (args.empty()) return ListFilter(operand, name);
    if (!args[0].is(Type::kString)) return Error(Cat(name, ": the first argument names a test"));
    std::vector<Value> kept;
    for (const Value& item : items) {
      WARP_ASSIGN_OR_RETURN(const bool passed,
                            RunTest(args[0].string(), item, args.size() > 1 ? args[1] : Value()));
      if (passed == (name == "select")) kept.push_back(item);
    }
    return Value::Array(std::move(kept));
  }
  if (name == "map" && !args.empty()) {  // map('filter', args...): the filter on each item
    if (!args[0].is(Type::kString)) return Error("map: the first argument names a filter");
    const std::string& filter = args[0].string();
    const Args rest(args.begin() + 1, args.end());
    std::vector<Value> mapped;
    for (const Value& item : items) {
      if (rest.empty() && kwargs.empty() && IsKnownFilter(filter, /*with_arguments=*/false)) {
        WARP_ASSIGN_OR_RETURN(Value value, SimpleFilter(item, filter));
        mapped.push_back(std::move(value));
      } else if (IsPythonFilter(filter, /*with_arguments=*/true)) {
        WARP_ASSIGN_OR_RETURN(Value value, ApplyPythonFilter(item, filter, rest, kwargs));
        mapped.push_back(std::move(value));
      } else {
        return absl::UnimplementedError(Cat("unsupported Jinja feature: map('", filter, "', ...)"));
      }
    }
    return Value::Array(std::move(mapped));
  }
  if (name == "map") {
    const Value* attribute = kwargs.Find("attribute");
    if (attribute == nullptr) return absl::UnimplementedError("unsupported Jinja feature: map() without attribute=");
    if (!attribute->is(Type::kString)) return Error("map: attribute must be a string");
    const Value* fallback = kwargs.Find("default");
    std::vector<Value> mapped;
    for (const Value& item : items) {
      if (!item.is_mapping()) return Error(Cat("map(attribute=) applies to a list of dicts, got a ", TypeName(item)));
      Value value = AttributePath(item, attribute->string());
      mapped.push_back(value.is(Type::kUndefined) && fallback != nullptr ? *fallback : value);
    }
    return Value::Array(std::move(mapped));
  }
  // sort(reverse, case_sensitive, attribute)
  const Value reverse = FilterArgument(args, kwargs, 0, "reverse", Value::Bool(false));
  const Value case_sensitive = FilterArgument(args, kwargs, 1, "case_sensitive", Value::Bool(false));
  const Value attribute = FilterArgument(args, kwargs, 2, "attribute", Value::None());
  if (!reverse.is(Type::kBool)) return Error("sort: reverse must be a boolean");
  if (!case_sensitive.is(Type::kBool)) return Error("sort: case_sensitive must be a boolean");
  if (!attribute.is(Type::kString) && !attribute.is(Type::kInt) && !attribute.is(Type::kNone)) {
    return Error("sort: attribute must be a string, an int or none");
  }
  std::vector<Value> keys;
  for (const Value& item : items) {
    if (attribute.is(Type::kNone)) {
      keys.push_back(item);
    } else {
      keys.push_back(AttributePath(item, attribute.is(Type::kInt) ? FormatJsNumber(attribute.number()) : attribute.string()));
    }
  }
  WARP_ASSIGN_OR_RETURN(std::vector<Value> sorted, SortValues(items, keys, case_sensitive.boolean(), reverse.boolean()));
  return Value::Array(std::move(sorted));
}

}  // namespace warp::chat
