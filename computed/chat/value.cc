#include "computed/chat/value.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/js_format.h"
#include "computed/chat/to_json.h"

namespace warp::chat {

Value Value::None() {
  Value v;
  v.type_ = Type::kNone;
  return v;
}

Value Value::Bool(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.number_ = b ? 1 : 0;
  return v;
}

Value Value::Int(double n) {
  Value v;
  v.type_ = Type::kInt;
  v.number_ = n;
  return v;
}

Value Value::Float(double n) {
  Value v;
  v.type_ = Type::kFloat;
  v.number_ = n;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

Value Value::Array(std::vector<Value> items) {
  Value v;
  v.type_ = Type::kArray;
  v.array_ = std::make_shared<const std::vector<Value>>(std::move(items));
  return v;
}

Value Value::Tuple(std::vector<Value> items) {
  Value v = Array(std::move(items));
  v.flag_ = true;
  return v;
}

Value Value::Object(ObjectMap map) {
  Value v;
  v.type_ = Type::kObject;
  v.object_ = std::make_shared<ObjectMap>(std::move(map));
  return v;
}

Value Value::Kwargs(ObjectMap map) {
  Value v = Object(std::move(map));
  v.flag_ = true;
  return v;
}

Value Value::Namespace(ObjectMap map) {
  Value v;
  v.type_ = Type::kNamespace;
  v.object_ = std::make_shared<ObjectMap>(std::move(map));
  return v;
}

Value Value::Function(NativeFunction fn) {
  Value v;
  v.type_ = Type::kFunction;
  v.function_ = std::make_shared<const NativeFunction>(std::move(fn));
  return v;
}

const void* Value::identity() const {
  if (array_) return array_.get();
  if (object_) return object_.get();
  if (function_) return function_.get();
  return nullptr;
}

const Value* ObjectMap::Find(std::string_view key) const {
  for (const Entry& entry : entries_) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

void ObjectMap::Set(std::string key, Value value) {
  for (Entry& entry : entries_) {
    if (entry.first == key) {
      entry.second = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

bool ObjectMap::Erase(std::string_view key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& entry) { return entry.first == key; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

std::string_view TypeName(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined: return "undefined";
    case Value::Type::kNone: return "none";
    case Value::Type::kBool: return "bool";
    case Value::Type::kInt: return "int";
    case Value::Type::kFloat: return "float";
    case Value::Type::kString: return "string";
    case Value::Type::kArray: return v.is_tuple() ? "tuple" : "list";
    case Value::Type::kObject: return v.is_kwargs() ? "keyword arguments" : "dict";
    case Value::Type::kNamespace: return "namespace";
    case Value::Type::kFunction: return "function";
  }
  return "?";
}

bool Truthy(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone:
      return false;
    case Value::Type::kBool:
      return v.boolean();
    case Value::Type::kInt:
    case Value::Type::kFloat:
      return v.number() != 0 && !std::isnan(v.number());
    case Value::Type::kString:
      return !v.string().empty();
    case Value::Type::kArray:
      return !v.array().empty();
    case Value::Type::kObject:
      return !v.object().empty();
    case Value::Type::kNamespace:
    case Value::Type::kFunction:
      return true;
  }
  return false;
}

absl::StatusOr<std::string> ToDisplayString(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined: return std::string("undefined");
    case Value::Type::kNone: return std::string("undefined");  // the reference's NullValue holds undefined
    case Value::Type::kBool: return std::string(v.boolean() ? "true" : "false");
    case Value::Type::kInt: return FormatJsNumber(v.number());
    case Value::Type::kFloat: return FormatJsFloat(v.number());
    case Value::Type::kString: return v.string();
    case Value::Type::kArray:
    case Value::Type::kObject:
    case Value::Type::kNamespace:
      return ToJson(v, JsonOptions{.undefined_as_null = false});
    case Value::Type::kFunction:
      break;
  }
  return absl::InvalidArgumentError("cannot print a function (a macro or a method) as text");
}

absl::StatusOr<std::string> ConcatString(const Value& v) {
  switch (v.type()) {
    case Value::Type::kFloat:
      return FormatJsNumber(v.number());
    case Value::Type::kArray: {  // Array.prototype.toString: elements' toString joined by ","
      std::string out;
      for (size_t i = 0; i < v.array().size(); ++i) {
        if (i > 0) out += ',';
        WARP_ASSIGN_OR_RETURN(std::string item, ToDisplayString(v.array()[i]));
        out += item;
      }
      return out;
    }
    case Value::Type::kObject:
    case Value::Type::kNamespace:
      return std::string("[object Map]");
    default:
      return ToDisplayString(v);
  }
}

namespace {

// The JavaScript type of `v.value`. The reference's NullValue is built
// without a value, so none holds undefined too (none === undefined).
enum class JsType { kUndefined, kNull, kBoolean, kNumber, kString, kObject };

JsType JsTypeOf(const Value& v) {
  switch (v.type()) {
    case Value::Type::kUndefined: return JsType::kUndefined;
    case Value::Type::kNone: return JsType::kUndefined;
    case Value::Type::kBool: return JsType::kBoolean;
    case Value::Type::kInt:
    case Value::Type::kFloat: return JsType::kNumber;
    case Value::Type::kString: return JsType::kString;
    default: return JsType::kObject;
  }
}

// ToPrimitive(object) for ==: arrays join, maps are "[object Map]".
absl::StatusOr<Value> ToPrimitive(const Value& v) {
  if (v.is(Value::Type::kFunction)) return Value::String("function");
  WARP_ASSIGN_OR_RETURN(std::string text, ConcatString(v));
  return Value::String(std::move(text));
}

}  // namespace

bool StrictEquals(const Value& a, const Value& b) {
  const JsType ta = JsTypeOf(a);
  if (ta != JsTypeOf(b)) return false;
  switch (ta) {
    case JsType::kUndefined:
    case JsType::kNull: return true;
    case JsType::kBoolean:
    case JsType::kNumber: return a.number() == b.number();
    case JsType::kString: return a.string() == b.string();
    case JsType::kObject: return a.identity() == b.identity();
  }
  return false;
}

absl::StatusOr<bool> LooseEquals(const Value& a, const Value& b) {
  const JsType ta = JsTypeOf(a);
  const JsType tb = JsTypeOf(b);
  if (ta == tb) return StrictEquals(a, b);
  const auto nullish = [](JsType t) { return t == JsType::kNull || t == JsType::kUndefined; };
  if (nullish(ta) || nullish(tb)) return nullish(ta) && nullish(tb);
  if (ta == JsType::kBoolean) return LooseEquals(Value::Int(a.number()), b);
  if (tb == JsType::kBoolean) return LooseEquals(a, Value::Int(b.number()));
  if (ta == JsType::kNumber && tb == JsType::kString) return a.number() == JsStringToNumber(b.string());
  if (ta == JsType::kString && tb == JsType::kNumber) return JsStringToNumber(a.string()) == b.number();
  if (ta == JsType::kObject) {
    WARP_ASSIGN_OR_RETURN(Value primitive, ToPrimitive(a));
    return LooseEquals(primitive, b);
  }
  if (tb == JsType::kObject) {
    WARP_ASSIGN_OR_RETURN(Value primitive, ToPrimitive(b));
    return LooseEquals(a, primitive);
  }
  return false;
}

namespace {

// An array index key ("0", "42"): JavaScript lists these first, ascending.
bool IsIndexKey(const std::string& key, uint64_t* index) {
  if (key.empty() || key.size() > 10 || (key.size() > 1 && key[0] == '0')) return false;
  uint64_t value = 0;
  for (char c : key) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *index = value;
  return value < 4294967295ULL;
}

template <typename Json>
Value ConvertJson(const Json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null: return Value::None();
    case nlohmann::json::value_t::boolean: return Value::Bool(json.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::Int(static_cast<double>(json.template get<int64_t>()));
    case nlohmann::json::value_t::number_unsigned:
      return Value::Int(static_cast<double>(json.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float: {
      const double d = json.template get<double>();
      return std::isfinite(d) && std::floor(d) == d ? Value::Int(d) : Value::Float(d);
    }
    case nlohmann::json::value_t::string: return Value::String(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(ConvertJson(item));
      return Value::Array(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      std::vector<std::pair<uint64_t, std::string>> index_keys;
      std::vector<std::string> other_keys;
      for (auto it = json.begin(); it != json.end(); ++it) {
        uint64_t index;
        if (IsIndexKey(it.key(), &index)) {
          index_keys.emplace_back(index, it.key());
        } else {
          other_keys.push_back(it.key());
        }
      }
      std::sort(index_keys.begin(), index_keys.end());
      ObjectMap map;
      for (const auto& [index, key] : index_keys) map.Set(key, ConvertJson(json.at(key)));
      for (const std::string& key : other_keys) map.Set(key, ConvertJson(json.at(key)));
      return Value::Object(std::move(map));
    }
    default:  // binary, discarded
      return Value();
  }
}

}  // namespace

Value FromJson(const nlohmann::json& json) { return ConvertJson(json); }
Value FromJson(const nlohmann::ordered_json& json) { return ConvertJson(json); }

}  // namespace warp::chat
