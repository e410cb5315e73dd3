#pragma once

// The `tojson` filter byte for byte as transformers defines it for Jinja2:
// json.dumps(x, ensure_ascii=False, indent=..., separators=...,
// sort_keys=...). Separators ", " and ": " (or "," and ": " when indenting),
// non-ASCII and </> left as is unless ensure_ascii, floats in Python's repr
// ("1.0", "1e-07", "-0.0"), tuples as arrays.
//
// Thread-safe: pure functions.

#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "computed/chat/value.h"

namespace warp::chat {

struct JsonOptions {
  // The text of one indentation level; nullopt writes one line (indent=None).
  // An empty string (indent=0) still puts every item on its own line.
  std::optional<std::string> indent;
  bool ensure_ascii = false;
  // {item separator, key separator}; defaults depend on `indent`.
  std::optional<std::pair<std::string, std::string>> separators;
  bool sort_keys = false;  // by code point, as Python sorts str keys
};

// Fails, as json.dumps does, for undefined, namespaces and functions
// ("cannot convert ... to JSON").
absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& options);

}  // namespace warp::chat
