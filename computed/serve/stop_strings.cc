#include "computed/serve/stop_strings.h"

#include <algorithm>

namespace warp::computed::serve {

std::string StopStrings::Push(std::string_view piece) {
  if (matched_) return "";
  pending_.append(piece);
  // The earliest match wins: the reply ends at the first stop in its text.
  size_t first = std::string::npos;
  for (const std::string& stop : stops_) {
    const size_t at = pending_.find(stop);
    if (at < first) {
      first = at;
      matched_stop_ = stop;
    }
  }
  if (first != std::string::npos) {
    matched_ = true;
    std::string out = pending_.substr(0, first);
    pending_.clear();
    return out;
  }
  // Hold back the longest tail that begins some stop sequence.
  size_t keep = 0;
  for (const std::string& stop : stops_) {
    for (size_t n = std::min(stop.size() - 1, pending_.size()); n > keep; --n) {
      if (std::string_view(pending_).substr(pending_.size() - n) ==
          std::string_view(stop).substr(0, n)) {
        keep = n;
        break;
      }
    }
  }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopStrings::Flush() {
  if (matched_) return "";
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace warp::computed::serve
