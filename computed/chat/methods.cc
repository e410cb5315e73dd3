// Methods of strings and dicts (`s.split('x')`, `d.items()`), bound to their
// object when looked up, with the reference's JavaScript behaviour.

#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/strings.h"
#include "computed/chat/py_format.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

absl::Status Error(std::string_view message) { return absl::InvalidArgumentError(std::string(message)); }

Value Bind(std::function<absl::StatusOr<Value>(const Args&)> fn) {
  return Value::Function([fn = std::move(fn)](Args args, const ScopePtr&) { return fn(args); });
}

// "hello world" -> "Hello World": /\b\w/g uppercased, ASCII word characters.
std::string TitleCase(std::string_view s) {
  std::string out(s);
  bool prev_word = false;
  for (char& c : out) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (word && !prev_word && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    prev_word = word;
  }
  return out;
}

std::string Capitalize(std::string_view s) {
  if (s.empty()) return std::string();
  char32_t cp;
  const size_t len = DecodeUtf8(s, 0, &cp);
  if (cp >= 0x10000) return std::string(s);  // charAt(0) is half a surrogate pair
  return JsToUpper(s.substr(0, len)) + std::string(s.substr(len));
}

absl::StatusOr<Value> AffixTest(const std::string& self, const Args& args, bool prefix) {
  const char* name = prefix ? "startswith" : "endswith";
  auto matches = [&](const std::string& affix) {
    if (affix.size() > self.size()) return false;
    return prefix ? self.compare(0, affix.size(), affix) == 0
                  : self.compare(self.size() - affix.size(), affix.size(), affix) == 0;
  };
  if (args.empty()) return Error(Cat(name, "() requires at least one argument"));
  if (args[0].is(Type::kString)) return Value::Bool(matches(args[0].string()));
  if (args[0].is(Type::kArray)) {
    for (const Value& item : args[0].array()) {
      if (!item.is(Type::kString)) return Error(Cat(name, "() tuple elements must be strings"));
      if (matches(item.string())) return Value::Bool(true);
    }
    return Value::Bool(false);
  }
  return Error(Cat(name, "() argument must be a string or tuple of strings"));
}

std::vector<std::string> SplitWhitespace(std::string_view text, double maxsplit) {  // Python: maxsplit < 0 is no limit
  text = JsTrimStart(text);
  std::vector<std::string> parts;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t start = pos;
    while (pos < text.size() && JsWhitespaceAt(text, pos) == 0) ++pos;
    if (maxsplit >= 0 && static_cast<double>(parts.size()) >= maxsplit) {
      parts.emplace_back(text.substr(start));
      break;
    }
    parts.emplace_back(text.substr(start, pos - start));
    while (size_t len = JsWhitespaceAt(text, pos)) pos += len;
  }
  return parts;
}

absl::StatusOr<Value> Split(const std::string& self, const Args& args) {
  const Value sep = args.size() > 0 ? args[0] : Value::None();
  if (!sep.is(Type::kString) && !sep.is(Type::kNone)) return Error("split() separator must be a string or none");
  const Value maxsplit = args.size() > 1 ? args[1] : Value::Int(-1);
  if (!maxsplit.is(Type::kInt)) return Error("split() maxsplit must be an int");
  std::vector<std::string> parts;
  if (sep.is(Type::kNone)) {
    parts = SplitWhitespace(self, maxsplit.number());
  } else {
    if (sep.string().empty()) return Error("split() separator is empty");
    for (std::string_view part : SplitString(self, sep.string())) parts.emplace_back(part);
    const double m = maxsplit.number();
    if (m >= 0 && static_cast<double>(parts.size()) > m + 1) {  // Python: a negative maxsplit is no limit
      const double n = static_cast<double>(parts.size());
      const auto start = static_cast<size_t>(m < 0 ? std::max(n + m, 0.0) : std::min(m, n));
      std::string rest = absl::StrJoin(parts.begin() + start, parts.end(), sep.string());
      parts.resize(start);
      parts.push_back(std::move(rest));
    }
  }
  std::vector<Value> items;
  for (std::string& part : parts) items.push_back(Value::String(std::move(part)));
  return Value::Array(std::move(items));
}

std::string ReplaceAll(const std::string& s, const std::string& from, const std::string& to, double count) {
  double remaining = count < 0 ? std::numeric_limits<double>::infinity() : count;
  std::string out;
  if (from.empty()) {  // /(?=)/gu: before every code point and at the end
    for (size_t pos = 0;; ) {
      if (remaining > 0) {
        out += to;
        --remaining;
      }
      if (pos >= s.size()) break;
      char32_t cp;
      const size_t len = DecodeUtf8(s, pos, &cp);
      out.append(s, pos, len);
      pos += len;
    }
    return out;
  }
  size_t pos = 0;
  while (remaining > 0) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
    --remaining;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

absl::StatusOr<Value> Replace(const std::string& self, const Args& args) {
  if (args.size() < 2) return Error("replace() requires at least two arguments");
  if (!args[0].is(Type::kString) || !args[1].is(Type::kString)) return Error("replace() arguments must be strings");
  Value count = Value::None();
  if (args.size() > 2) {
    if (args[2].is_kwargs()) {
      const Value* found = args[2].object().Find("count");
      count = found != nullptr ? *found : Value::None();
    } else {
      count = args[2];
    }
  }
  if (!count.is(Type::kInt) && !count.is(Type::kNone)) return Error("replace() count must be an int or none");
  if (count.is(Type::kInt) && count.number() == 0) return Value::String(self);
  const double n = count.is(Type::kNone) ? -1 : count.number();
  return Value::String(ReplaceAll(self, args[0].string(), args[1].string(), n));
}

Value StringMember(const Value& object, std::string_view name) {
  const std::string& s = object.string();
  auto unary = [&](std::string (*fn)(std::string_view)) {
    return Bind([s, fn](const Args&) -> absl::StatusOr<Value> { return Value::String(fn(s)); });
  };
  if (name == "length") return Value::Int(static_cast<double>(Utf16Length(s)));
  if (name == "upper") return unary(&JsToUpper);
  if (name == "lower") return unary(&JsToLower);
  if (name == "title") return unary(&TitleCase);
  if (name == "capitalize") return unary(&Capitalize);
  if (name == "strip" || name == "lstrip" || name == "rstrip") {  // Python's: strip('\n') strips only newlines
    const bool left = name != "rstrip";
    const bool right = name != "lstrip";
    return Bind([s, left, right](const Args& args) -> absl::StatusOr<Value> {
      if (args.empty() || args[0].is(Type::kNone)) return Value::String(PyStrip(s, nullptr, left, right));
      if (!args[0].is(Type::kString)) return Error("strip arg must be None or str");
      return Value::String(PyStrip(s, &args[0].string(), left, right));
    });
  }
  if (name == "startswith") return Bind([s](const Args& args) { return AffixTest(s, args, true); });
  if (name == "endswith") return Bind([s](const Args& args) { return AffixTest(s, args, false); });
  if (name == "split") return Bind([s](const Args& args) { return Split(s, args); });
  if (name == "replace") return Bind([s](const Args& args) { return Replace(s, args); });
  return Value();
}

Value Pairs(const ObjectMap& map) {
  std::vector<Value> items;
  for (const auto& [key, value] : map) items.push_back(Value::Tuple({Value::String(key), value}));  // (key, value)
  return Value::Array(std::move(items));
}

absl::StatusOr<Value> DictSort(const Value& object, Args args) {
  ObjectMap kwargs;
  Args positional;
  for (Value& arg : args) {
    if (arg.is_kwargs()) {
      kwargs = arg.object();
    } else {
      positional.push_back(std::move(arg));
    }
  }
  auto option = [&](size_t index, std::string_view key, Value fallback) {
    if (index < positional.size()) return positional[index];
    const Value* found = kwargs.Find(key);
    return found != nullptr ? *found : fallback;
  };
  const Value case_sensitive = option(0, "case_sensitive", Value::Bool(false));
  const Value by = option(1, "by", Value::String("key"));
  const Value reverse = option(2, "reverse", Value::Bool(false));
  if (!case_sensitive.is(Type::kBool)) return Error("dictsort: case_sensitive must be a boolean");
  if (!by.is(Type::kString) || (by.string() != "key" && by.string() != "value")) {
    return Error("dictsort: by must be 'key' or 'value'");
  }
  if (!reverse.is(Type::kBool)) return Error("dictsort: reverse must be a boolean");
  const Value pairs = Pairs(object.object());
  std::vector<Value> keys;
  for (const Value& pair : pairs.array()) keys.push_back(pair.array()[by.string() == "key" ? 0 : 1]);
  WARP_ASSIGN_OR_RETURN(std::vector<Value> sorted,
                        SortValues(pairs.array(), keys, case_sensitive.boolean(), reverse.boolean()));
  return Value::Array(std::move(sorted));
}

Value DictMember(const Value& object, std::string_view name) {
  if (name == "get") {
    return Bind([object](const Args& args) -> absl::StatusOr<Value> {
      if (args.empty() || !args[0].is(Type::kString)) {
        return Error(Cat("dict.get() key must be a string, got ",
                                  args.empty() ? std::string_view("nothing") : TypeName(args[0])));
      }
      if (const Value* found = object.object().Find(args[0].string())) return *found;
      return args.size() > 1 ? args[1] : Value::None();
    });
  }
  if (name == "items") return Bind([object](const Args&) -> absl::StatusOr<Value> { return Pairs(object.object()); });
  if (name == "keys") {
    return Bind([object](const Args&) -> absl::StatusOr<Value> {
      std::vector<Value> keys;
      for (const auto& entry : object.object()) keys.push_back(Value::String(entry.first));
      return Value::Array(std::move(keys));
    });
  }
  if (name == "values") {
    return Bind([object](const Args&) -> absl::StatusOr<Value> {
      std::vector<Value> values;
      for (const auto& entry : object.object()) values.push_back(entry.second);
      return Value::Array(std::move(values));
    });
  }
  if (name == "dictsort") return Bind([object](const Args& args) { return DictSort(object, args); });
  return Value();
}

}  // namespace

bool IsDictMethod(std::string_view name) {
  return name == "get" || name == "items" || name == "keys" || name == "values" || name == "dictsort";
}

Value BuiltinMember(const Value& object, std::string_view name) {
  switch (object.type()) {
    case Type::kString:
      return StringMember(object, name);
    case Type::kObject:
      return DictMember(object, name);
    case Type::kArray:
      return name == "length" ? Value::Int(static_cast<double>(object.array().size())) : Value();
    default:
      return Value();
  }
}

}  // namespace warp::chat
