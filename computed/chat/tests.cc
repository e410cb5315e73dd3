// Jinja tests (`x is name`), with the reference's type rules: a tuple is not
// `iterable` but is a `sequence`; a namespace is not a `mapping`.

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
      "iterable", "mapping", "sequence", "lower", "upper", "defined", "undefined"};
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
  return absl::UnimplementedError(Cat("unsupported Jinja test: ", name));
}

}  // namespace warp::chat
