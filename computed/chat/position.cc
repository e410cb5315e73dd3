#include "computed/chat/position.h"

#include <algorithm>

#include "absl/strings/cord.h"
#include "common/utf8.h"
#include "computed/chat/strings.h"

namespace warp::chat {
namespace {

constexpr absl::string_view kPositionPayload = "warp.chat/position";

}  // namespace

std::string ToString(SourcePos pos) {
  return Cat("line ", pos.line, ", column ", pos.column);
}

LineIndex::LineIndex(std::string_view source) : source_(source) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\n') line_starts_.push_back(i + 1);
  }
}

SourcePos LineIndex::At(size_t offset) const {
  offset = std::min(offset, source_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());  // >= 1
  const size_t start = line_starts_[line - 1];
  int column = 1;
  for (size_t i = start; i < offset; ++i) {
    if (!utf8::IsContinuation(source_[i])) ++column;
  }
  return SourcePos{static_cast<int>(line), column};
}

absl::Status ErrorAt(absl::StatusCode code, SourcePos pos, std::string_view message) {
  absl::Status status(code, Cat(ToString(pos), ": ", message));
  status.SetPayload(kPositionPayload, absl::Cord("1"));
  return status;
}

bool HasPosition(const absl::Status& status) {
  return status.GetPayload(kPositionPayload).has_value();
}

absl::Status WithPosition(const absl::Status& status, SourcePos pos) {
  if (status.ok() || HasPosition(status) || pos.line == 0) return status;
  return ErrorAt(status.code(), pos, std::string(status.message()));
}

}  // namespace warp::chat
