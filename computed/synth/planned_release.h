#pragma once

// The container `computed convert` would write of a release, planned from its
// config.json before its weights are downloaded (`computed plan --config`):
// experts and trunk in the release's own formats (ReleaseFormats) unless the
// flags choose others, no files.
//
// Thread-compatible: pure functions over values.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

struct ReleaseFlags {
  std::string experts = "native";  // native | bf16 | q8 | q4 | vq3r, as convert --experts
  std::string trunk = "native";    // a TrunkChoice, as convert --trunk
};

struct PlannedRelease {
  Manifest manifest;
  std::string formats;  // "release FP8 E4M3 128x128 blocks; experts f8_e4m3_b128, trunk native"
};

// Errors name `source` (the config's path) and the field at fault.
absl::StatusOr<PlannedRelease> PlanRelease(const nlohmann::ordered_json& config,
                                           const ReleaseFlags& flags, std::string_view source);

}  // namespace warp::computed
