#pragma once

// ParseModelConfig: a config.json (or a manifest's "config") read into a
// ModelConfig through its family's parser. Apart from model_config.h because
// it needs the families (family.h), which need ModelConfig.

#include <string_view>

#include "absl/status/statusor.h"
#include "computed/model/model_config.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

// Reads `config` (a config.json object) for `model_type`: the keys every
// family shares here, the rest in the family's own parser
// (computed/model/families/). Errors name the key, e.g.
// "config.json: n_routed_experts: missing"; a config carried by a manifest
// is named as such: with `source` "m.warp/manifest.json",
// "m.warp/manifest.json: config.n_routed_experts: missing".
absl::StatusOr<ModelConfig> ParseModelConfig(std::string_view model_type,
                                             const nlohmann::ordered_json& config,
                                             std::string_view source = "config.json");

}  // namespace warp::computed
