#pragma once

// Typed reads of config.json keys for the family parsers, with errors that
// name the key: "config.json: n_routed_experts: missing".
//
// Thread-safe: pure functions.

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace warp::computed::config_fields {

using Json = nlohmann::ordered_json;

// InvalidArgument "config.json: KEY: PROBLEM".
absl::Status KeyError(std::string_view key, std::string_view problem);

absl::StatusOr<uint32_t> Uint(const Json& config, std::string_view key);
// Absent or null keys give `fallback` (e.g. q_lora_rank of DeepSeek-V2-Lite).
absl::StatusOr<uint32_t> UintOr(const Json& config, std::string_view key, uint32_t fallback);
absl::StatusOr<double> DoubleOr(const Json& config, std::string_view key, double fallback);
absl::StatusOr<bool> BoolOr(const Json& config, std::string_view key, bool fallback);
// The first of `keys` that is present (older and newer spellings of one key).
absl::StatusOr<uint32_t> FirstUint(const Json& config,
                                   std::initializer_list<std::string_view> keys);

}  // namespace warp::computed::config_fields
