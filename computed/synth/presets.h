#pragma once

// Named synthetic model shapes: each is a Hugging Face style config.json plus
// default storage formats, and can be scaled to a target container size.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container_writer.h"
#include "common/format/manifest.h"
#include "common/format/tensor_format.h"
#include "computed/model/model_config.h"
#include "computed/model/tensor_specs.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

struct Preset {
  std::string arch;   // model_type, e.g. "deepseek_v3"
  std::string name;   // e.g. "tiny", "k2-slice"
  std::string about;  // one line for --help
  nlohmann::ordered_json config;
  TensorFormat expert_format = TensorFormat::kBF16;
  TensorFormat trunk_format = TensorFormat::kBF16;
};

const std::vector<Preset>& AllPresets();
absl::StatusOr<Preset> FindPreset(std::string_view arch, std::string_view name);

// The format of each trunk matrix: asked for every matrix TrunkTensors lists
// that is not precision-critical (those stay f32); one whose shape the answer
// cannot hold stays f32.
using TrunkFormatOf = std::function<TensorFormat(const TrunkTensor& tensor)>;
TrunkFormatOf UniformTrunk(TensorFormat format);
// The trunk's tensors in file order, each matrix in the format `format_of` gives.
std::vector<TensorSpec> TrunkSpecsOf(const ModelConfig& config, const TrunkFormatOf& format_of);

// The engram tables (DeepSeek V4.1) a container of `config` holds: one a
// layer of engram_layer_ids, the release's row format (head_dim E4M3 codes,
// then head_dim / 32 E8M0 scales), and their bytes on disk.
std::vector<EngramTableEntry> EngramTablesOf(const ModelConfig& config);
uint64_t EngramTablesBytes(const ModelConfig& config);

// Bytes of the container `config` would produce with these formats (trunk.bin
// plus every bank and engram table; manifest and tokenizer excluded).
absl::StatusOr<uint64_t> ContainerBytes(std::string_view arch, const nlohmann::ordered_json& config,
                                        TensorFormat expert_format, TensorFormat trunk_format);
absl::StatusOr<uint64_t> ContainerBytes(std::string_view arch, const nlohmann::ordered_json& config,
                                        TensorFormat expert_format,
                                        const TrunkFormatOf& trunk_format_of);

// The manifest a container of `config` would have with these formats — the
// trunk's size and every bank's record layout, no files: what
// `computed plan --config` plans before a release is converted.
absl::StatusOr<Manifest> PlannedManifest(std::string_view arch, const nlohmann::ordered_json& config,
                                         TensorFormat expert_format, TensorFormat trunk_format);
absl::StatusOr<Manifest> PlannedManifest(std::string_view arch, const nlohmann::ordered_json& config,
                                         TensorFormat expert_format,
                                         const TrunkFormatOf& trunk_format_of);

// Returns `config` with num_hidden_layers (and, when even the smallest layer
// count is too big, the routed expert count) chosen so the container is as
// large as possible without exceeding `target_bytes`. Fails if even one MoE
// layer with top-k experts does not fit, naming the smallest possible size.
absl::StatusOr<nlohmann::ordered_json> ScaleToSize(std::string_view arch,
                                                   const nlohmann::ordered_json& config,
                                                   TensorFormat expert_format,
                                                   TensorFormat trunk_format,
                                                   uint64_t target_bytes);
absl::StatusOr<nlohmann::ordered_json> ScaleToSize(std::string_view arch,
                                                   const nlohmann::ordered_json& config,
                                                   TensorFormat expert_format,
                                                   const TrunkFormatOf& trunk_format_of,
                                                   uint64_t target_bytes);

}  // namespace warp::computed
