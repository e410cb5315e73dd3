#pragma once

// `computed convert`: a Hugging Face checkpoint (config.json + safetensors), or
// a GGUF file (gguf_import.h), to
// a NAME.warp container, streaming tensor by tensor in bounded memory.
// Tensor names and shapes come from the architecture (model/tensor_specs.h);
// anything missing, misshapen or of an unsupported dtype is refused by name.

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"

namespace warp::computed {

struct ConvertOptions {
  std::string experts = "native";  // native | q8 | q4
  std::string trunk = "native";    // a TrunkChoice (model/trunk_choice.h)
  // Write each layer's early-route fold into the trunk (EarlyRouteFoldSpecs);
  // false (`--no-early-route-folds`) leaves them to `computed run --early-route`.
  bool early_route_folds = true;
  bool direct_io = true;
  bool show_progress = false;
};

struct ConvertResult {
  Manifest manifest;
  uint64_t bytes_read = 0;
  double seconds = 0;
};

absl::StatusOr<ConvertResult> ConvertCheckpoint(const std::filesystem::path& hf_dir,
                                                const std::filesystem::path& out,
                                                const ConvertOptions& options);

}  // namespace warp::computed
