#include "computed/chat/operators.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/interpreter.h"
#include "computed/chat/strings.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

bool NumericLike(const Value& v) { return v.is_number() || v.is(Type::kBool); }

absl::Status Unknown(std::string_view op, const Value& left, const Value& right) {
  return absl::InvalidArgumentError(
      Cat("unsupported operator '", op, "' between ", TypeName(left), " and ", TypeName(right)));
}

absl::StatusOr<Value> Concat(const Value& left, const Value& right) {
  WARP_ASSIGN_OR_RETURN(std::string a, ConcatString(left));
  WARP_ASSIGN_OR_RETURN(std::string b, ConcatString(right));
  if (b.size() > kMaxRenderBytes - std::min(a.size(), kMaxRenderBytes)) {
    return absl::ResourceExhaustedError(Cat("a string of more than ", kMaxRenderBytes >> 20, " MiB"));
  }
  return Value::String(a + b);
}

absl::StatusOr<Value> Power(const Value& left, const Value& right) {
  const double a = left.number();
  const double b = right.number();
  if (a == 0 && b < 0) return absl::InvalidArgumentError("0.0 cannot be raised to a negative power");
  const double result = std::pow(a, b);
  if (!std::isfinite(result)) return absl::InvalidArgumentError("exponentiation result is not a finite real number");
  const bool is_float = left.is(Type::kFloat) || right.is(Type::kFloat) || b < 0;
  return is_float ? Value::Float(result) : Value::Int(result);
}

// Both operands are int or float; nullopt-like Undefined when `op` is not arithmetic.
absl::StatusOr<Value> Arithmetic(std::string_view op, const Value& left, const Value& right, bool* handled) {
  const double a = left.number();
  const double b = right.number();
  const bool is_float = left.is(Type::kFloat) || right.is(Type::kFloat);
  auto number = [&](double v) { return is_float ? Value::Float(v) : Value::Int(v); };
  *handled = true;
  if (op == "+") return number(a + b);
  if (op == "-") return number(a - b);
  if (op == "*") return number(a * b);
  if ((op == "/" || op == "//" || op == "%") && b == 0) {
    return absl::InvalidArgumentError(op == "/" ? "division by zero" : "integer division or modulo by zero");
  }
  if (op == "/") return Value::Float(a / b);
  if (op == "//") return number(std::floor(a / b));
  if (op == "%") {  // Python's: the sign of the divisor
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return number(r);
  }
  if (op == "<") return Value::Bool(a < b);
  if (op == ">") return Value::Bool(a > b);
  if (op == ">=") return Value::Bool(a >= b);
  if (op == "<=") return Value::Bool(a <= b);
  *handled = false;
  return Value();
}

bool ArrayContains(const Value& array, const Value& item) {
  for (const Value& element : array.array()) {
    if (PyEquals(element, item)) return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<Value> ApplyBinary(std::string_view op, const Value& left, const Value& right) {
  if (op == "==" || op == "!=") return Value::Bool(PyEquals(left, right) == (op == "=="));
  if (op == "~") return Concat(left, right);  // str() of each side: "None", "" for undefined
  const bool membership = op == "in" || op == "not in";
  if (left.is(Type::kUndefined) || right.is(Type::kUndefined)) {
    if (right.is(Type::kUndefined) && membership) return Value::Bool(op == "not in");
    return absl::InvalidArgumentError(Cat("cannot apply '", op, "' to an undefined value"));
  }
  if (left.is(Type::kNone) || right.is(Type::kNone)) {
    return absl::InvalidArgumentError(Cat("cannot apply '", op, "' to none"));
  }
  if (op == "**" && NumericLike(left) && NumericLike(right)) return Power(left, right);
  if (left.is_number() && right.is_number()) {
    bool handled = false;
    absl::StatusOr<Value> result = Arithmetic(op, left, right, &handled);
    if (handled) return result;
  } else if (left.is(Type::kArray) && right.is(Type::kArray)) {
    if (op == "+") {
      if (left.array().size() + right.array().size() > kMaxRenderItems) {
        return absl::ResourceExhaustedError(Cat("a list of more than ", kMaxRenderItems, " items"));
      }
      std::vector<Value> items = left.array();
      items.insert(items.end(), right.array().begin(), right.array().end());
      return Value::Array(std::move(items));
    }
  } else if (right.is(Type::kArray)) {
    if (membership) return Value::Bool(ArrayContains(right, left) == (op == "in"));
  }
  if (left.is(Type::kString) && right.is(Type::kString)) {
    if (op == "+") return Concat(left, right);
    // UTF-8 byte order is code point order, as Python compares str.
    if (op == "<") return Value::Bool(left.string() < right.string());
    if (op == ">") return Value::Bool(left.string() > right.string());
    if (op == "<=") return Value::Bool(left.string() <= right.string());
    if (op == ">=") return Value::Bool(left.string() >= right.string());
  }
  if (op == "*" && ((left.is(Type::kString) && right.is(Type::kInt)) || (left.is(Type::kInt) && right.is(Type::kString)))) {
    const std::string& text = left.is(Type::kString) ? left.string() : right.string();
    const double times = left.is(Type::kInt) ? left.number() : right.number();
    if (times > 0 && text.size() * times > static_cast<double>(kMaxRenderBytes)) {
      return absl::ResourceExhaustedError(Cat("a string of more than ", kMaxRenderBytes >> 20, " MiB"));
    }
    std::string out;
    for (double i = 0; i < times; ++i) out += text;
    return Value::String(std::move(out));
  }
  if (left.is(Type::kString) && right.is(Type::kString) && membership) {
    const bool found = right.string().find(left.string()) != std::string::npos;
    return Value::Bool(found == (op == "in"));
  }
  if (left.is(Type::kString) && right.is(Type::kObject) && membership) {
    const bool found = right.object().Find(left.string()) != nullptr;
    return Value::Bool(found == (op == "in"));
  }
  return Unknown(op, left, right);
}

absl::StatusOr<Value> ApplyUnary(std::string_view op, const Value& operand) {
  if (op == "not") return Value::Bool(!Truthy(operand));
  if (NumericLike(operand)) {
    const double result = (op == "-" ? -1 : 1) * operand.number();
    return operand.is(Type::kFloat) ? Value::Float(result) : Value::Int(result);
  }
  return absl::InvalidArgumentError(Cat("unsupported operator '", op, "' for ", TypeName(operand)));
}

}  // namespace warp::chat
