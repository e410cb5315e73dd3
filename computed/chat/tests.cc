// Jinja tests (`x is name`), with the reference's type rules: a tuple is not
// `iterable` but is a `sequence`; a namespace is not a `mapping`.

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/parser_internal.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

bool IsLowerOrUpper(const Value& v, bool upper) {
  if (!v.is(Type::kString)) return false;
  return v.string() == (upper ? JsToUpper(v.string()) : JsToLower(v.string()));
}

}  // namespace

bool IsKnownTest(std::string_view name) {
  static constexpr std::string_view kTests[] = {
      "boolean", "callable", "odd", "even", "false", "true", "none", "string", "number", "integer",
      "iterable", "mapping", "sequence", "lower", "upper", "defined", "undefined", "eq", "equalto",
      "ne", "lt", "le", "gt", "ge", "lessthan", "greaterthan", "divisibleby", "in", "sameas",
      "float", "escaped"};
  for (std::string_view test : kTests) {
    if (test == name) return true;
  }
  return false;
}

absl::StatusOr<bool> RunTest(std::string_view name, const Value& v, const Value& argument) {
  if (name == "boolean") return v.is(Type::kBool);
  if (name == "callable") return v.is(Type::kFunction);
  if (name == "odd" || name == "even") {
    if (!v.is(Type::kInt)) return absl::InvalidArgumentError(Cat("test '", name, "' needs an int, got ", TypeName(v)));
    const bool odd = std::fmod(v.number(), 2) != 0;
    return name == "odd" ? odd : !odd;
  }
  if (name == "false") return v.is(Type::kBool) && !v.boolean();
  if (name == "true") return v.is(Type::kBool) && v.boolean();
  if (name == "none") return v.is(Type::kNone);
  if (name == "string") return v.is(Type::kString);
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is(Type::kInt);
  if (name == "iterable") return v.is(Type::kArray) || v.is(Type::kString) || v.is(Type::kObject);
  if (name == "mapping") return v.is(Type::kObject);
  if (name == "sequence") return v.is(Type::kArray) || v.is(Type::kObject) || v.is(Type::kString);
  if (name == "lower") return IsLowerOrUpper(v, /*upper=*/false);
  if (name == "upper") return IsLowerOrUpper(v, /*upper=*/true);
  if (name == "defined") return !v.is(Type::kUndefined);
  if (name == "undefined") return v.is(Type::kUndefined);
  if (name == "equalto" || name == "eq") return PyEquals(v, argument);
  if (name == "ne") return !PyEquals(v, argument);
  if (name == "lt" || name == "le" || name == "gt" || name == "ge" || name == "lessthan" ||
      name == "greaterthan") {
    absl::StatusOr<int> order = CompareValues(v, argument, /*case_sensitive=*/true);
    if (!order.ok()) {
      return absl::InvalidArgumentError(Cat("test '", name, "': cannot compare a ", TypeName(v), " with a ",
                                            TypeName(argument)));
    }
    if (name == "lt" || name == "lessthan") return *order < 0;
    if (name == "le") return *order <= 0;
    if (name == "gt" || name == "greaterthan") return *order > 0;
    return *order >= 0;
  }
  if (name == "divisibleby") {
    if (!v.is(Type::kInt) || !argument.is(Type::kInt)) {
      return absl::InvalidArgumentError(Cat("test 'divisibleby' needs ints, got ", TypeName(v), " and ", TypeName(argument)));
    }
    if (argument.number() == 0) return absl::InvalidArgumentError("test 'divisibleby': division by zero");
    return std::fmod(v.number(), argument.number()) == 0;
  }
  if (name == "in") {
    if (argument.is(Type::kUndefined)) return false;  // Jinja2's Undefined is an empty iterable
    if (argument.is(Type::kArray)) {
      return std::any_of(argument.array().begin(), argument.array().end(),
                         [&](const Value& item) { return PyEquals(v, item); });
    }
    if (argument.is(Type::kString) && v.is(Type::kString)) {
      return argument.string().find(v.string()) != std::string::npos;
    }
    if (argument.is_mapping() && v.is(Type::kString)) return argument.object().Find(v.string()) != nullptr;
    return absl::InvalidArgumentError(Cat("test 'in': a ", TypeName(v), " in a ", TypeName(argument)));
  }
  // Values are copies here: sameas is `is` for the singletons and equality of the same type.
  if (name == "sameas") return v.type() == argument.type() && PyEquals(v, argument);
  if (name == "float") return v.is(Type::kFloat);
  if (name == "escaped") return false;  // no Markup values: autoescape is off, as transformers sets it
  return absl::UnimplementedError(Cat("unsupported Jinja test: ", name));
}

}  // namespace warp::chat
