#pragma once

// Runtime values of the Jinja interpreter. They began as a mirror of
// @huggingface/jinja's RuntimeValue classes and print, compare and convert
// as Python Jinja2 does (issue 16): every number is a double tagged int or
// float, objects keep insertion order, arrays/objects/namespaces are shared
// by reference.
//
// Thread-compatible: values belong to one Render call.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace warp::chat {

class Value;
class Scope;
class ObjectMap;

// Call arguments as the reference passes them: the positional values, then
// one trailing kwargs object when any keyword argument was given.
using Args = std::vector<Value>;
// `caller` is the scope of the call site (macros see it, as in the reference).
using NativeFunction =
    std::function<absl::StatusOr<Value>(Args args, const std::shared_ptr<Scope>& caller)>;

// One runtime value. Cheap to copy: strings are copied, containers and
// functions are shared (as JavaScript references are).
//
// Thread-compatible.
class Value {
 public:
  enum class Type : uint8_t {
    kUndefined, kNone, kBool, kInt, kFloat, kString, kArray, kObject, kNamespace, kFunction
  };

  Value() = default;  // undefined
  static Value None();
  static Value Bool(bool b);
  static Value Int(double v);
  static Value Float(double v);
  static Value String(std::string s);
  static Value Array(std::vector<Value> items);
  static Value Tuple(std::vector<Value> items);  // an array from a (a, b) literal
  static Value Object(ObjectMap map);
  static Value Kwargs(ObjectMap map);  // an object of keyword arguments
  static Value Namespace(ObjectMap map);
  static Value Function(NativeFunction fn);

  Type type() const { return type_; }
  bool is(Type t) const { return type_ == t; }
  bool is_none_or_undefined() const { return type_ == Type::kNone || type_ == Type::kUndefined; }
  bool is_number() const { return type_ == Type::kInt || type_ == Type::kFloat; }
  bool is_tuple() const { return type_ == Type::kArray && flag_; }
  bool is_kwargs() const { return type_ == Type::kObject && flag_; }
  bool is_mapping() const { return type_ == Type::kObject || type_ == Type::kNamespace; }

  bool boolean() const { return number_ != 0; }  // REQUIRES: kBool
  double number() const { return number_; }      // REQUIRES: kInt, kFloat or kBool
  const std::string& string() const { return string_; }   // REQUIRES: kString
  const std::vector<Value>& array() const { return *array_; }  // REQUIRES: kArray
  const ObjectMap& object() const { return *object_; }  // REQUIRES: is_mapping()
  ObjectMap& mutable_namespace() const { return *object_; }  // REQUIRES: kNamespace
  const NativeFunction& function() const { return *function_; }  // REQUIRES: kFunction
  // Storage address of an array, object or function: JavaScript's reference
  // identity for == and `in`. nullptr for primitives.
  const void* identity() const;

 private:
  Type type_ = Type::kUndefined;
  bool flag_ = false;  // tuple (arrays) or kwargs (objects)
  double number_ = 0;
  std::string string_;
  std::shared_ptr<const std::vector<Value>> array_;
  std::shared_ptr<ObjectMap> object_;
  std::shared_ptr<const NativeFunction> function_;
};

// Insertion-ordered string-keyed map (JavaScript Map). Lookups are linear:
// chat-template objects are small (messages, tool schemas).
//
// Thread-compatible.
class ObjectMap {
 public:
  using Entry = std::pair<std::string, Value>;

  const Value* Find(std::string_view key) const;
  // Inserts at the end, or replaces in place when `key` exists (Map.set).
  void Set(std::string key, Value value);
  bool Erase(std::string_view key);
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  std::vector<Entry> entries_;
};

// Type name for error messages: "string", "list", "dict", "none", ...
std::string_view TypeName(const Value& v);

// Python truthiness as the reference computes it (a namespace is always true).
bool Truthy(const Value& v);

// Python's str(v), as Jinja2 prints {{ v }}: "1.0", "True", "None", "" for
// undefined, repr() of lists, tuples and dicts ("['a', 1]", "(1,)",
// "{'k': None}"), "<Namespace {...}>". Fails for functions.
absl::StatusOr<std::string> ToDisplayString(const Value& v);

// What `~` concatenates: the same str(v).
absl::StatusOr<std::string> ConcatString(const Value& v);

// Python's ==: numbers and booleans by value (True == 1 == 1.0), strings,
// lists and tuples (never equal to each other) item by item, dicts by their
// items in any order, none only to none, undefined only to undefined,
// namespaces and functions by identity. No coercion ('1' != 1).
bool PyEquals(const Value& a, const Value& b);

// JSON -> Value as Python's json.loads builds it: integers are ints, numbers
// with a fraction or exponent floats (2.0 stays a float), object keys in
// their order.
Value FromJson(const nlohmann::json& json);
Value FromJson(const nlohmann::ordered_json& json);

}  // namespace warp::chat
