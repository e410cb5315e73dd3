#include "computed/model/config_fields.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace warp::computed::config_fields {

absl::Status KeyError(std::string_view key, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("config.json: ", std::string(key), ": ", std::string(problem)));
}

absl::StatusOr<uint32_t> Uint(const Json& config, std::string_view key) {
  auto it = config.find(std::string(key));
  if (it == config.end()) return KeyError(key, "missing");
  // Literal JSON built in C++ stores small integers as signed; accept any non-negative one.
  if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<uint64_t>() > UINT32_MAX) {
    return KeyError(key, "must be a non-negative 32-bit integer");
  }
  return it->get<uint32_t>();
}

absl::StatusOr<uint32_t> UintOr(const Json& config, std::string_view key, uint32_t fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  return Uint(config, key);
}

absl::StatusOr<double> DoubleOr(const Json& config, std::string_view key, double fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  // JSON has no infinities, but 1e999 parses to one.
  if (!it->is_number() || !std::isfinite(it->get<double>())) {
    return KeyError(key, "must be a finite number");
  }
  return it->get<double>();
}

absl::StatusOr<bool> BoolOr(const Json& config, std::string_view key, bool fallback) {
  auto it = config.find(std::string(key));
  if (it == config.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return KeyError(key, "must be true or false");
  return it->get<bool>();
}

absl::StatusOr<uint32_t> FirstUint(const Json& config,
                                   std::initializer_list<std::string_view> keys) {
  for (std::string_view key : keys) {
    if (config.contains(std::string(key))) return Uint(config, key);
  }
  std::string names;
  for (std::string_view key : keys)
    absl::StrAppend(&names, names.empty() ? "" : " or ", std::string(key));
  return KeyError(names, "missing");
}

}  // namespace warp::computed::config_fields
