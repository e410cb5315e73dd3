#pragma once

// A hash map keyed by std::string that can be searched with a std::string_view
// without a copy. Debian's Abseil has an absl::string_view distinct from
// std::string_view, so flat_hash_map's own transparent hash does not accept
// std::string_view; this one does.

#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace warp::text {

struct StringViewHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const {
    return absl::Hash<absl::string_view>{}(absl::string_view(text.data(), text.size()));
  }
};

struct StringViewEq {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return a == b; }
};

template <typename Value>
using StringMap = absl::flat_hash_map<std::string, Value, StringViewHash, StringViewEq>;

}  // namespace warp::text
