#pragma once

// What templates can call besides filters, as @huggingface/jinja provides it:
//   tests    (tests.cc)    x is defined / none / string / mapping / ...
//   methods  (methods.cc)  str: upper lower strip lstrip rstrip title capitalize
//                                startswith endswith split replace, .length;
//                          dict: get items keys values dictsort; list: .length
//   globals  (globals.cc)  namespace() range() raise_exception() strftime_now()
//                          true/false/none and True/False/None
//   sorting  (sort.cc)     the ordering of |sort and dictsort
//
// Thread-safe: pure functions (strftime_now reads the clock).

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/chat/scope.h"
#include "computed/chat/value.h"

namespace warp::chat {

// Runs the test `name` on `operand`; `argument` is the second operand of
// equalto / eq (only reachable through selectattr). Unknown name: error.
absl::StatusOr<bool> RunTest(std::string_view name, const Value& operand, const Value& argument);

// `object.name` when `name` is not a key: the methods above (as functions
// bound to `object`) or a length. Undefined when there is none.
Value BuiltinMember(const Value& object, std::string_view name);

// The dict methods get/items/keys/values/dictsort, also usable as filters.
bool IsDictMethod(std::string_view name);

// Declares the globals in the outermost scope.
void InstallGlobals(Scope& scope);
// Names a render context may not redefine (the reference rejects them).
bool IsGlobalName(std::string_view name);
// namespace(...): every scope resolves this name, unless it set it itself.
const Value& NamespaceFunction();

// A filter's argument: args[index], else kwargs[key], else `fallback`.
Value FilterArgument(const Args& args, const ObjectMap& kwargs, size_t index, std::string_view key,
                     Value fallback);

// The value at a dotted path of dict keys and list indices ("a.b.0"; the
// reference's getAttributeValue); undefined where a step is missing.
Value AttributePath(const Value& item, const std::string& path);

// The Jinja2 builtin filters beyond the reference's (python_filters.cc):
// whether `name` is one, with or without arguments, and applying it.
bool IsPythonFilter(std::string_view name, bool with_arguments);
absl::StatusOr<Value> ApplyPythonFilter(const Value& operand, std::string_view name, const Args& args,
                                        const ObjectMap& kwargs);

// -1, 0 or 1; fails for mixed or unordered types (compareRuntimeValues).
absl::StatusOr<int> CompareValues(const Value& a, const Value& b, bool case_sensitive);
// Stable sort of `items` by the parallel `keys`.
absl::StatusOr<std::vector<Value>> SortValues(const std::vector<Value>& items, const std::vector<Value>& keys,
                                              bool case_sensitive, bool reverse);

}  // namespace warp::chat
