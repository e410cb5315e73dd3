#pragma once

// The `tojson` filter and the JSON text of printed containers, byte for byte
// as @huggingface/jinja writes them: separators ", " and ": " (or "," and
// ": " when indenting), non-ASCII and </> left as is unless ensure_ascii,
// integral floats written as integers ("1", as JavaScript has no 1.0).
//
// Thread-safe: pure functions.

#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "computed/chat/value.h"

namespace warp::chat {

struct JsonOptions {
  int indent = 0;  // spaces per level; 0 writes one line (JavaScript: 0 is falsy)
  bool ensure_ascii = false;
  // {item separator, key separator}; defaults depend on `indent`.
  std::optional<std::pair<std::string, std::string>> separators;
  // undefined prints as null (tojson) or as "undefined" (printing a container).
  bool undefined_as_null = true;
};

// Fails for functions, tuples and kwargs objects ("cannot convert ... to JSON").
absl::StatusOr<std::string> ToJson(const Value& v, const JsonOptions& options);

}  // namespace warp::chat
