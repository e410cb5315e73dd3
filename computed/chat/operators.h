#pragma once

// Operators with the reference's rules: == and != are JavaScript loose
// equality, `+` concatenates when either side is a string (and lists with
// lists), `~` always concatenates, `/` is always float, `%` keeps the sign of
// the dividend (JavaScript), `in` tests lists (===), substrings and dict keys,
// and `x in undefined` is false. Comparisons other than == need numbers.
//
// Thread-safe: pure functions.

#include <string_view>

#include "absl/status/statusor.h"
#include "computed/chat/value.h"

namespace warp::chat {

// Every binary operator except the short-circuiting `and` / `or`.
absl::StatusOr<Value> ApplyBinary(std::string_view op, const Value& left, const Value& right);

// `not`, unary `-` and `+`.
absl::StatusOr<Value> ApplyUnary(std::string_view op, const Value& operand);

}  // namespace warp::chat
