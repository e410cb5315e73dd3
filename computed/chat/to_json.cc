#include "computed/chat/to_json.h"

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "computed/chat/js_format.h"
#include "computed/chat/py_format.h"
#include "computed/chat/strings.h"
#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

std::string Quote(std::string_view s, const JsonOptions& options) {
  std::string quoted = JsonQuote(s);
  return options.ensure_ascii ? EscapeNonAscii(quoted) : quoted;
}

absl::StatusOr<std::string> Write(const Value& v, const JsonOptions& options, int depth);

// The newline and indentation before an item at `depth`.
std::string Newline(const JsonOptions& options, int depth) {
  std::string out = "\n";
  for (int i = 0; i < depth; ++i) out += *options.indent;
  return out;
}

absl::StatusOr<std::string> WriteArray(const Value& v, const JsonOptions& options, int depth,
                                       const std::string& item_sep) {
  std::vector<std::string> items;
  for (const Value& item : v.array()) {
    WARP_ASSIGN_OR_RETURN(std::string text, Write(item, options, depth + 1));
    items.push_back(std::move(text));
  }
  if (!options.indent.has_value() || items.empty()) return Cat("[", absl::StrJoin(items, item_sep), "]");
  const std::string child = Newline(options, depth + 1);
  return Cat("[", child, absl::StrJoin(items, item_sep + child), Newline(options, depth), "]");
}

absl::StatusOr<std::string> WriteObject(const Value& v, const JsonOptions& options, int depth,
                                        const std::string& item_sep, const std::string& key_sep) {
  std::vector<const ObjectMap::Entry*> sorted;
  for (const ObjectMap::Entry& entry : v.object()) sorted.push_back(&entry);
  if (options.sort_keys) {
    std::stable_sort(sorted.begin(), sorted.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  }
  std::vector<std::string> entries;
  for (const ObjectMap::Entry* entry : sorted) {
    WARP_ASSIGN_OR_RETURN(std::string text, Write(entry->second, options, depth + 1));
    entries.push_back(Cat(Quote(entry->first, options), key_sep, text));
  }
  if (!options.indent.has_value() || entries.empty()) return Cat("{", absl::StrJoin(entries, item_sep), "}");
  const std::string child = Newline(options, depth + 1);
  return Cat("{", child, absl::StrJoin(entries, item_sep + child), Newline(options, depth), "}");
}

absl::StatusOr<std::string> Write(const Value& v, const JsonOptions& options, int depth) {
  std::string item_sep = options.indent.has_value() ? "," : ", ";
  std::string key_sep = ": ";
  if (options.separators.has_value()) std::tie(item_sep, key_sep) = *options.separators;
  switch (v.type()) {
    case Value::Type::kNone:
      return std::string("null");
    case Value::Type::kBool:
      return std::string(v.boolean() ? "true" : "false");
    case Value::Type::kInt:
      return FormatPyInt(v.number());
    case Value::Type::kFloat:
      return FormatPyJsonFloat(v.number());
    case Value::Type::kString:
      return Quote(v.string(), options);
    case Value::Type::kArray:  // lists and tuples
      return WriteArray(v, options, depth, item_sep);
    case Value::Type::kObject:
      return WriteObject(v, options, depth, item_sep, key_sep);
    case Value::Type::kUndefined:
    case Value::Type::kNamespace:
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
