#pragma once

// `computed synth`: writes a valid container of seeded random weights for a
// preset shape, streaming record by record so memory stays bounded whatever
// the size.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"

namespace warp::computed {

struct SynthOptions {
  std::string arch = "deepseek_v3";
  std::string preset = "tiny";
  std::optional<uint64_t> target_bytes;  // --size: scale layers/experts to fit
  uint64_t seed = 1;
  std::optional<TensorFormat> expert_format;  // preset default if unset
  std::optional<TensorFormat> trunk_format;   // preset default if unset
  // A TrunkChoice by kind ("mixed", "q4:KIND,..."), over trunk_format as the native one.
  std::optional<std::string> trunk_choice;
  bool direct_io = true;
  bool show_progress = false;
};

struct SynthResult {
  Manifest manifest;
  uint64_t bytes_written = 0;
  double seconds = 0;
};

absl::StatusOr<SynthResult> SynthesizeModel(const std::filesystem::path& out,
                                            const SynthOptions& options);

}  // namespace warp::computed
