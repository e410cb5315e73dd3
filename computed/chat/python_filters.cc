// The Jinja2 builtin filters @huggingface/jinja lacks, after Jinja2 3.x's
// own definitions (jinja2/filters.py), for templates written against
// Python: count, d, e / escape, center, wordcount, truncate, striptags,
// format, round, batch, slice, sum, min, max. batch and slice are lists
// here where Jinja2 yields generators (the same items, printed with `| list`).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "common/status.h"
#include "computed/chat/builtins.h"
#include "computed/chat/interpreter.h"
#include "computed/chat/parser_internal.h"
#include "computed/chat/py_format.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

using Type = Value::Type;

absl::Status Error(std::string_view message) {
  return absl::InvalidArgumentError(std::string(message));
}


absl::StatusOr<std::string> Str(const Value& v) { return ToDisplayString(v); }

// markupsafe.escape: & < > " ' as entities.
std::string Escape(std::string_view s) {
  std::string out;
  for (const char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Markup.striptags: comments and tags out, the whitespace collapsed to single
// spaces (str.split()), then the basic entities unescaped, in Jinja2's order.
std::string StripTags(std::string_view s) {
  std::string text;
  for (size_t i = 0; i < s.size();) {
    if (s.substr(i, 4) == "<!--") {
      const size_t end = s.find("-->", i + 4);
      if (end != std::string_view::npos) {
        i = end + 3;
        continue;
      }
    }
    if (s[i] == '<') {
      const size_t end = s.find('>', i + 1);
      if (end != std::string_view::npos) {
        i = end + 1;
        continue;
      }
    }
    text += s[i++];
  }
  std::string out;
  bool space = false;
  for (const char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f') {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  static const std::pair<std::string_view, std::string_view> kEntities[] = {
      {"&lt;", "<"},   {"&gt;", ">"},  {"&quot;", "\""},
      {"&#34;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
  for (const auto& [entity, plain] : kEntities) {
    for (size_t at = out.find(entity); at != std::string::npos;
         at = out.find(entity, at + plain.size())) {
      out.replace(at, entity.size(), plain);
    }
  }
  return out;
}

size_t Length(std::string_view s) { return CodePoints(s).size(); }

std::string Substr(std::string_view s, size_t count) {
  std::string out;
  const std::vector<std::string> points = CodePoints(s);
  for (size_t i = 0; i < std::min(count, points.size()); ++i) out += points[i];
  return out;
}

// str.center(width): the extra space of an odd margin goes right unless the width is odd.
std::string Center(std::string_view s, int64_t width) {
  const int64_t length = static_cast<int64_t>(Length(s));
  if (width <= length) return std::string(s);
  const int64_t margin = width - length;
  const int64_t left = margin / 2 + (margin & width & 1);
  return std::string(left, ' ') + std::string(s) + std::string(margin - left, ' ');
}

// len(re.findall(r"\w+", s)), ASCII word characters plus every non-ASCII byte.
int64_t WordCount(std::string_view s) {
  int64_t words = 0;
  bool in_word = false;
  for (const char c : s) {
    const auto byte = static_cast<unsigned char>(c);
    const bool word = std::isalnum(byte) || c == '_' || byte >= 0x80;
    if (word && !in_word) ++words;
    in_word = word;
  }
  return words;
}

// Jinja2's truncate(length=255, killwords=False, end='...', leeway=5).
absl::StatusOr<Value> Truncate(const std::string& s, const Args& args, const ObjectMap& kwargs) {
  const Value length = FilterArgument(args, kwargs, 0, "length", Value::Int(255));
  const Value killwords = FilterArgument(args, kwargs, 1, "killwords", Value::Bool(false));
  const Value end = FilterArgument(args, kwargs, 2, "end", Value::String("..."));
  const Value leeway = FilterArgument(args, kwargs, 3, "leeway", Value::Int(5));
  if (!length.is(Type::kInt) || !leeway.is(Type::kInt) || !end.is(Type::kString)) {
    return Error("truncate: length and leeway must be ints, end a string");
  }
  const int64_t size = static_cast<int64_t>(Length(s));
  const int64_t limit = static_cast<int64_t>(length.number());
  const int64_t end_size = static_cast<int64_t>(Length(end.string()));
  if (limit < end_size) return Error("truncate: expected length >= the length of end");
  if (leeway.number() < 0) return Error("truncate: expected leeway >= 0");
  if (size <= limit + static_cast<int64_t>(leeway.number())) return Value::String(s);
  std::string kept = Substr(s, static_cast<size_t>(limit - end_size));
  if (!Truthy(killwords)) {
    const size_t space = kept.rfind(' ');
    if (space != std::string::npos) kept.resize(space);
  }
  return Value::String(kept + end.string());
}

// value % args: %s %r %d %i %f (with a precision) %x %%.
absl::StatusOr<Value> Format(const std::string& format, const Args& args) {
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%') {
      out += format[i];
      continue;
    }
    size_t j = i + 1;
    int precision = -1;
    if (j < format.size() && format[j] == '.') {
      precision = 0;
      for (++j; j < format.size() && std::isdigit(static_cast<unsigned char>(format[j])); ++j) {
        precision = precision * 10 + (format[j] - '0');
      }
    }
    if (j >= format.size()) return Error("format: incomplete format");
    const char conversion = format[j];
    i = j;
    if (conversion == '%') {
      out += '%';
      continue;
    }
    if (next >= args.size()) return Error("format: not enough arguments for format string");
    const Value& arg = args[next++];
    switch (conversion) {
      case 's': {
        WARP_ASSIGN_OR_RETURN(std::string text, Str(arg));
        out += text;
        break;
      }
      case 'r':
        if (arg.is(Type::kString)) {
          out += PyRepr(arg.string());
        } else {
          WARP_ASSIGN_OR_RETURN(std::string text, Str(arg));
          out += text;
        }
        break;
      case 'd':
      case 'i':
      case 'x':
        if (!arg.is_number() && !arg.is(Type::kBool)) {
          return Error(
              Cat("format: %", std::string(1, conversion), " needs a number, not ", TypeName(arg)));
        }
        if (conversion == 'x') {  // Python: a sign, then the magnitude's digits
          const double value = std::trunc(arg.number());
          char hex[32];
          std::snprintf(hex, sizeof(hex), "%llx",
                        static_cast<unsigned long long>(std::fabs(value)));
          out += value < 0 ? Cat("-", hex) : std::string(hex);
        } else {
          out += FormatPyInt(std::trunc(arg.number()));
        }
        break;
      case 'f': {
        if (!arg.is_number() && !arg.is(Type::kBool))
          return Error(Cat("format: %f needs a number, not ", TypeName(arg)));
        char text[400];
        std::snprintf(text, sizeof(text), "%.*f", precision < 0 ? 6 : precision, arg.number());
        out += text;
        break;
      }
      default:
        return absl::UnimplementedError(
            Cat("format: the conversion %", std::string(1, conversion), " is not supported"));
    }
  }
  if (next < args.size())
    return Error("format: not all arguments converted during string formatting");
  return Value::String(std::move(out));
}

// Python's round(x, n): half to even on the value's binary value.
absl::StatusOr<Value> Round(const Value& operand, const Args& args, const ObjectMap& kwargs) {
  if (!operand.is_number()) return Error(Cat("round applies to a number, not ", TypeName(operand)));
  const Value precision = FilterArgument(args, kwargs, 0, "precision", Value::Int(0));
  const Value method = FilterArgument(args, kwargs, 1, "method", Value::String("common"));
  if (!precision.is(Type::kInt) || !method.is(Type::kString)) {
    return Error("round: precision must be an int, method a string");
  }
  const double scale = std::pow(10.0, precision.number());
  double rounded;
  if (method.string() == "common") {
    if (operand.is(Type::kInt)) return operand;  // round(int, n) is the int
    if (precision.number() < 0 || precision.number() > 300) {
      rounded = std::nearbyint(operand.number() * scale) / scale;
    } else {
      // Python rounds the float's exact binary value, ties to even, as printf
      // does (2.675 is 2.67499..., so 2.67); the digits are then read back.
      char text[400];
      std::snprintf(text, sizeof(text), "%.*f", static_cast<int>(precision.number()),
                    operand.number());
      rounded = std::strtod(text, nullptr);
    }
  } else if (method.string() == "ceil") {
    rounded = std::ceil(operand.number() * scale) / scale;
  } else if (method.string() == "floor") {
    rounded = std::floor(operand.number() * scale) / scale;
  } else {
    return Error("round: method must be 'common', 'ceil' or 'floor'");
  }
  return Value::Float(rounded);
}

// Value at the dotted `attribute` of `item` (Jinja2's make_attrgetter); the item itself for none.
Value Attribute(const Value& item, const Value& attribute) {
  if (attribute.is(Type::kNone)) return item;
  return AttributePath(
      item, attribute.is(Type::kInt) ? FormatPyInt(attribute.number()) : attribute.string());
}

absl::StatusOr<Value> Sum(const Value& operand, const Args& args, const ObjectMap& kwargs) {
  if (!operand.is(Type::kArray))
    return Error(Cat("sum applies to a list, not ", TypeName(operand)));
  const Value attribute = FilterArgument(args, kwargs, 0, "attribute", Value::None());
  Value total = FilterArgument(args, kwargs, 1, "start", Value::Int(0));
  for (const Value& item : operand.array()) {
    const Value term = Attribute(item, attribute);
    if (!(term.is_number() || term.is(Type::kBool)) ||
        !(total.is_number() || total.is(Type::kBool))) {
      return Error(
          Cat("sum: unsupported operand types for +: ", TypeName(total), " and ", TypeName(term)));
    }
    const double value = total.number() + term.number();
    total =
        total.is(Type::kFloat) || term.is(Type::kFloat) ? Value::Float(value) : Value::Int(value);
  }
  return total;
}

absl::StatusOr<Value> MinMax(const Value& operand, bool max, const Args& args,
                             const ObjectMap& kwargs) {
  std::vector<Value> items;
  if (operand.is(Type::kArray)) {
    items = operand.array();
  } else if (operand.is(Type::kString)) {
    for (std::string& c : CodePoints(operand.string()))
      items.push_back(Value::String(std::move(c)));
  } else {
    return Error(Cat(max ? "max" : "min", " applies to a list, not ", TypeName(operand)));
  }
  const Value case_sensitive = FilterArgument(args, kwargs, 0, "case_sensitive", Value::Bool(false));
  const Value attribute = FilterArgument(args, kwargs, 1, "attribute", Value::None());
  if (items.empty()) return Value();  // undefined: "No aggregated item, sequence was empty."
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    WARP_ASSIGN_OR_RETURN(const int order,
                          CompareValues(Attribute(items[i], attribute),
                                        Attribute(items[best], attribute), Truthy(case_sensitive)));
    if (max ? order > 0 : order < 0) best = i;
  }
  return items[best];
}

absl::StatusOr<Value> Batch(const Value& operand, const Args& args, const ObjectMap& kwargs) {
  if (!operand.is(Type::kArray))
    return Error(Cat("batch applies to a list, not ", TypeName(operand)));
  const Value size = FilterArgument(args, kwargs, 0, "linecount", Value::None());
  const Value fill = FilterArgument(args, kwargs, 1, "fill_with", Value::None());
  if (!size.is(Type::kInt) || size.number() < 1)
    return Error("batch: linecount must be a positive int");
  const size_t n = static_cast<size_t>(size.number());
  std::vector<Value> batches, current;
  for (const Value& item : operand.array()) {
    current.push_back(item);
    if (current.size() == n) batches.push_back(Value::Array(std::exchange(current, {})));
  }
  if (!current.empty()) {
    if (!fill.is(Type::kNone)) current.resize(n, fill);
    batches.push_back(Value::Array(std::move(current)));
  }
  return Value::Array(std::move(batches));
}

absl::StatusOr<Value> Slice(const Value& operand, const Args& args, const ObjectMap& kwargs) {
  if (!operand.is(Type::kArray))
    return Error(Cat("slice applies to a list, not ", TypeName(operand)));
  const Value count = FilterArgument(args, kwargs, 0, "slices", Value::None());
  const Value fill = FilterArgument(args, kwargs, 1, "fill_with", Value::None());
  if (!count.is(Type::kInt) || count.number() < 1)
    return Error("slice: slices must be a positive int");
  const std::vector<Value>& items = operand.array();
  const size_t slices = static_cast<size_t>(count.number());
  const size_t per_slice = items.size() / slices, with_extra = items.size() % slices;
  std::vector<Value> out;
  size_t offset = 0;
  for (size_t s = 0; s < slices; ++s) {
    const size_t start = offset + s * per_slice;
    if (s < with_extra) ++offset;
    const size_t end = offset + (s + 1) * per_slice;
    std::vector<Value> part(items.begin() + start, items.begin() + end);
    if (!fill.is(Type::kNone) && s >= with_extra) part.push_back(fill);
    out.push_back(Value::Array(std::move(part)));
  }
  return Value::Array(std::move(out));
}

}  // namespace

bool IsPythonFilter(std::string_view name, bool with_arguments) {
  static constexpr std::string_view kBoth[] = {"count",     "e",        "escape",    "center",
                                               "wordcount", "truncate", "striptags", "round",
                                               "sum",       "min",      "max",       "d"};
  static constexpr std::string_view kWithArguments[] = {"format", "batch", "slice"};
  for (std::string_view known : kBoth) {
    if (known == name) return true;
  }
  if (!with_arguments) return false;
  for (std::string_view known : kWithArguments) {
    if (known == name) return true;
  }
  return false;
}

absl::StatusOr<Value> ApplyPythonFilter(const Value& operand, std::string_view name,
                                        const Args& args, const ObjectMap& kwargs) {
  if (name == "d") {  // default(value='', boolean=False)
    const Value fallback = FilterArgument(args, kwargs, 0, "default_value", Value::String(""));
    const bool boolean = Truthy(FilterArgument(args, kwargs, 1, "boolean", Value::Bool(false)));
    if (operand.is(Type::kUndefined) || (boolean && !Truthy(operand))) return fallback;
    return operand;
  }
  if (name == "count") {
    if (operand.is(Type::kString)) return Value::Int(static_cast<double>(Length(operand.string())));
    if (operand.is(Type::kArray)) return Value::Int(static_cast<double>(operand.array().size()));
    if (operand.is(Type::kObject)) return Value::Int(static_cast<double>(operand.object().size()));
    return Error(Cat("count applies to a string, list or dict, not ", TypeName(operand)));
  }
  if (name == "e" || name == "escape") {
    if (operand.is(Type::kUndefined)) return Value::String("");
    WARP_ASSIGN_OR_RETURN(std::string text, Str(operand));
    return Value::String(Escape(text));
  }
  if (name == "round") return Round(operand, args, kwargs);
  if (name == "sum") return Sum(operand, args, kwargs);
  if (name == "min" || name == "max") return MinMax(operand, name == "max", args, kwargs);
  if (name == "batch") return Batch(operand, args, kwargs);
  if (name == "slice") return Slice(operand, args, kwargs);
  // The rest take str(value).
  WARP_ASSIGN_OR_RETURN(const std::string text, Str(operand));
  if (name == "center") {
    const Value width = FilterArgument(args, kwargs, 0, "width", Value::Int(80));
    if (!width.is(Type::kInt)) return Error("center: width must be an int");
    return Value::String(Center(text, static_cast<int64_t>(width.number())));
  }
  if (name == "wordcount") return Value::Int(static_cast<double>(WordCount(text)));
  if (name == "truncate") return Truncate(text, args, kwargs);
  if (name == "striptags") return Value::String(StripTags(text));
  if (name == "format") {
    if (!kwargs.empty())
      return absl::UnimplementedError("format: keyword arguments are not supported");
    return Format(text, args);
  }
  return absl::UnimplementedError(Cat("unsupported Jinja filter: ", name));
}

}  // namespace warp::chat
