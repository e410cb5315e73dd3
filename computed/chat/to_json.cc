#include "computed/chat/to_json.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "computed/chat/js_format.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

std::string Quote(std::string_view s, const JsonOptions& options) {
  std::string quoted = JsonQuote(s);
  return options.ensure_ascii ? EscapeNonAscii(quoted) : quoted;
}

absl::StatusOr<std::string> Write(const Value& v, const JsonOptions& options, int depth);

absl::StatusOr<std::string> WriteArray(const Value& v, const JsonOptions& options, int depth,
                                       const std::string& item_sep) {
  std::vector<std::string> items;
  for (const Value& item : v.array()) {
    WARP_ASSIGN_OR_RETURN(std::string text, Write(item, options, depth + 1));
    items.push_back(std::move(text));
  }
  if (options.indent == 0 || items.empty()) return Cat("[", absl::StrJoin(items, item_sep), "]");
  const std::string base = "\n" + std::string(static_cast<size_t>(options.indent) * depth, ' ');
  const std::string child = base + std::string(options.indent, ' ');
  return Cat("[", child, absl::StrJoin(items, item_sep + child), base, "]");
}

absl::StatusOr<std::string> WriteObject(const Value& v, const JsonOptions& options, int depth,
                                        const std::string& item_sep, const std::string& key_sep) {
  const std::string base = "\n" + std::string(static_cast<size_t>(options.indent) * depth, ' ');
  const std::string child = base + std::string(options.indent, ' ');
  std::vector<std::string> entries;
  for (const auto& [key, value] : v.object()) {
    WARP_ASSIGN_OR_RETURN(std::string text, Write(value, options, depth + 1));
    std::string entry = Cat(Quote(key, options), key_sep, text);
    entries.push_back(options.indent != 0 ? child + entry : std::move(entry));
  }
  if (options.indent == 0 || entries.empty()) return Cat("{", absl::StrJoin(entries, item_sep), "}");
  return Cat("{", absl::StrJoin(entries, item_sep), base, "}");
}

absl::StatusOr<std::string> Write(const Value& v, const JsonOptions& options, int depth) {
  std::string item_sep = options.indent != 0 ? "," : ", ";
  std::string key_sep = ": ";
  if (options.separators.has_value()) std::tie(item_sep, key_sep) = *options.separators;
  switch (v.type()) {
    case Value::Type::kNone:
      return std::string("null");
    case Value::Type::kUndefined:
      return std::string(options.undefined_as_null ? "null" : "undefined");
    case Value::Type::kBool:
      return std::string(v.boolean() ? "true" : "false");
    case Value::Type::kInt:
    case Value::Type::kFloat:
      return FormatJsonNumber(v.number());
    case Value::Type::kString:
      return Quote(v.string(), options);
    case Value::Type::kArray:
      if (v.is_tuple()) break;
      return WriteArray(v, options, depth, item_sep);
    case Value::Type::kObject:
      if (v.is_kwargs()) break;
      return WriteObject(v, options, depth, item_sep, key_sep);
    case Value::Type::kNamespace:
      return WriteObject(v, options, depth, item_sep, key_sep);
    case Value::Type::kFunction:
      break;
  }
  return absl::InvalidArgumentError(Cat("cannot convert a ", TypeName(v), " to JSON"));
}

}  // namespace

absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& options) {
  return Write(v, options, 0);
}

}  // namespace warp::chat
