#pragma once

// What a container holds against what its config describes: every trunk
// tensor and every bank of the manifest must be one the model uses, so that
// a config edited to fewer layers (or a manifest with stray entries) is
// refused instead of running a truncated model. What is missing is the
// engine's check, at load (Transformer::CheckTensors).
//
// Thread-safe: pure functions.

#include <string_view>

#include "absl/status/status.h"
#include "common/format/manifest.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// FailedPrecondition naming `source` (the manifest's path) and the entry.
absl::Status CheckManifestFitsConfig(const Manifest& manifest, const ModelConfig& config,
                                     std::string_view source);

}  // namespace warp::computed
