#pragma once

// Cat(): string concatenation that takes std::string_view. Debian's Abseil
// has an absl::string_view distinct from std::string_view, which
// absl::StrCat does not accept, and this code uses std::string_view.
//
// Thread-safe: pure functions.

#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/strings/string_view.h"

namespace warp::chat {
namespace cat_internal {

inline void Append(std::string& out, std::string_view s) { out.append(s); }
inline void Append(std::string& out, const std::string& s) { out.append(s); }
inline void Append(std::string& out, const char* s) { out.append(s); }
inline void Append(std::string& out, absl::string_view s) { out.append(s.data(), s.size()); }
template <typename T>
  requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>)
void Append(std::string& out, T value) {
  out += std::to_string(value);
}

}  // namespace cat_internal

template <typename... Parts>
std::string Cat(const Parts&... parts) {
  std::string out;
  (cat_internal::Append(out, parts), ...);
  return out;
}

// JavaScript's s.split(sep) for a non-empty `sep`: "a,,b" -> {"a", "", "b"}.
inline std::vector<std::string_view> SplitString(std::string_view s, std::string_view sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (size_t hit = s.find(sep); hit != std::string_view::npos; hit = s.find(sep, start)) {
    parts.push_back(s.substr(start, hit - start));
    start = hit + sep.size();
  }
  parts.push_back(s.substr(start));
  return parts;
}

}  // namespace warp::chat
