#include "computed/chat/value.h"

#include <algorithm>
#include <cmath>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/js_format.h"
#include "computed/chat/py_format.h"
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

namespace {

absl::StatusOr<std::string> PyStr(const Value& v, bool repr);

absl::StatusOr<std::string> PyItems(const std::vector<Value>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    WARP_ASSIGN_OR_RETURN(std::string item, PyStr(items[i], true));
    out += item;
  }
  return out;
}

absl::StatusOr<std::string> PyDict(const ObjectMap& map) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : map) {
    if (!first) out += ", ";
    first = false;
    WARP_ASSIGN_OR_RETURN(std::string text, PyStr(value, true));
    out += PyRepr(key) + ": " + text;
  }
  return out + "}";
}

// str(v), or repr(v) for the items of containers.
absl::StatusOr<std::string> PyStr(const Value& v, bool repr) {
  switch (v.type()) {
    case Value::Type::kUndefined: return std::string(repr ? "Undefined" : "");
    case Value::Type::kNone: return std::string("None");
    case Value::Type::kBool: return std::string(v.boolean() ? "True" : "False");
    case Value::Type::kInt: return FormatPyInt(v.number());
    case Value::Type::kFloat: return FormatPyFloat(v.number());
    case Value::Type::kString: return repr ? PyRepr(v.string()) : v.string();
    case Value::Type::kArray: {
      WARP_ASSIGN_OR_RETURN(std::string items, PyItems(v.array()));
      if (!v.is_tuple()) return "[" + items + "]";
      return "(" + items + (v.array().size() == 1 ? ",)" : ")");
    }
    case Value::Type::kObject: return PyDict(v.object());
    case Value::Type::kNamespace: {
      WARP_ASSIGN_OR_RETURN(std::string dict, PyDict(v.object()));
      return "<Namespace " + dict + ">";
    }
    case Value::Type::kFunction:
      break;
  }
  return absl::InvalidArgumentError("cannot print a function (a macro or a method) as text");
}

}  // namespace

absl::StatusOr<std::string> ToDisplayString(const Value& v) { return PyStr(v, false); }

absl::StatusOr<std::string> ConcatString(const Value& v) { return PyStr(v, false); }

bool PyEquals(const Value& a, const Value& b) {
  const auto numeric = [](const Value& v) { return v.is_number() || v.is(Value::Type::kBool); };
  if (numeric(a) && numeric(b)) return a.number() == b.number();
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case Value::Type::kUndefined:
    case Value::Type::kNone: return true;
    case Value::Type::kString: return a.string() == b.string();
    case Value::Type::kArray: {
      if (a.is_tuple() != b.is_tuple() || a.array().size() != b.array().size()) return false;
      for (size_t i = 0; i < a.array().size(); ++i) {
        if (!PyEquals(a.array()[i], b.array()[i])) return false;
      }
      return true;
    }
    case Value::Type::kObject: {
      if (a.object().size() != b.object().size()) return false;
      for (const auto& [key, value] : a.object()) {
        const Value* other = b.object().Find(key);
        if (other == nullptr || !PyEquals(value, *other)) return false;
      }
      return true;
    }
    default: return a.identity() == b.identity();
  }
}

namespace {

template <typename Json>
Value ConvertJson(const Json& json) {
  switch (json.type()) {
    case nlohmann::json::value_t::null: return Value::None();
    case nlohmann::json::value_t::boolean: return Value::Bool(json.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::Int(static_cast<double>(json.template get<int64_t>()));
    case nlohmann::json::value_t::number_unsigned:
      return Value::Int(static_cast<double>(json.template get<uint64_t>()));
    case nlohmann::json::value_t::number_float:  // Python's json.loads keeps 2.0 a float
      return Value::Float(json.template get<double>());
    case nlohmann::json::value_t::string: return Value::String(json.template get<std::string>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(ConvertJson(item));
      return Value::Array(std::move(items));
    }
    case nlohmann::json::value_t::object: {  // a Python dict: the keys in their order
      ObjectMap map;
      for (auto it = json.begin(); it != json.end(); ++it) map.Set(it.key(), ConvertJson(it.value()));
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
