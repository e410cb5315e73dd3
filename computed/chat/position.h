#pragma once

// Where things are in a template: line/column positions and errors that name
// them ("line 3, column 5: unsupported Jinja feature: {% include %}").
//
// Thread-safe: LineIndex is immutable after construction.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace warp::chat {

struct SourcePos {
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based, in code points
};

std::string ToString(SourcePos pos);

// Maps byte offsets of one source text to line and column.
class LineIndex {
 public:
  explicit LineIndex(std::string_view source);
  SourcePos At(size_t offset) const;

 private:
  std::string_view source_;
  std::vector<size_t> line_starts_;  // byte offset of each line's first byte
};

// "line L, column C: message", marked so outer nodes do not re-prefix it.
absl::Status ErrorAt(absl::StatusCode code, SourcePos pos, std::string_view message);

// True if `status` already names a position (made by ErrorAt or WithPosition).
bool HasPosition(const absl::Status& status);

// Prefixes `pos` unless the error already names a position.
absl::Status WithPosition(const absl::Status& status, SourcePos pos);

}  // namespace warp::chat
