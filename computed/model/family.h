#pragma once

// ModelFamily: everything WARP knows about one architecture, in one place —
// how its config.json reads, the per-layer plan it produces (which mixer,
// which FFN, which tensors), the matrices of one routed-expert record, and
// where those come from in a Hugging Face checkpoint. Each family is one file
// pair in computed/model/families/; docs/ENGINE.md#adding-a-family walks
// through adding one.
//
// Thread-safe: families are stateless singletons.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "common/format/container_writer.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

// Where one matrix of one routed expert lives in a Hugging Face checkpoint.
struct CheckpointSlice {
  std::string tensor;             // checkpoint tensor name
  std::optional<uint32_t> index;  // fused [experts, ...] tensors: the expert's slice of dim 0
  bool transposed = false;        // stored [in, out] (x @ W); the record holds [out, in]
  // MXFP4 releases hold the matrix instead as FP4 blocks with E8M0 scales,
  // U8 both: fused [experts, out, in/32, 16] and [experts, out, in/32]
  // (gpt-oss, with `index`), or one expert's compressed-tensors
  // weight_packed [out, in/2] and weight_scale [out, in/32] (Kimi K3); used,
  // and kept native, when the checkpoint has them.
  std::string mxfp4_blocks, mxfp4_scales;
  // Or one tensor of this name for the expert, [out, in] as the record holds
  // it (a GGUF file imported, gguf_import.h); used when the checkpoint has it.
  std::string expert_tensor;
};

// Release tensors a family keeps verbatim in the container, and where
// (computed/convert/kept_tensors.h writes them).
struct KeptTensorsRule {
  std::string file;                   // e.g. "dspark.safetensors"
  std::string about;                  // e.g. "DSpark speculative-decoding stages (mtp.*)"
  std::vector<std::string> prefixes;  // tensor names starting with one of these
};

class ModelFamily {
 public:
  virtual ~ModelFamily() = default;

  virtual Architecture arch() const = 0;
  virtual std::string_view name() const = 0;  // the manifest's architecture
  // The config.json model_type values it reads: its name, and aliases.
  virtual std::vector<std::string_view> model_types() const { return {name()}; }
  // The object holding the hyper-parameters: config.json itself, or a
  // multimodal release's text model (Kimi K3's text_config).
  virtual absl::StatusOr<const nlohmann::ordered_json*> TextConfig(
      const nlohmann::ordered_json& config) const {
    return &config;
  }
  // Reads the family's own keys (of TextConfig) into `config`, whose common keys are set.
  virtual absl::Status Parse(const nlohmann::ordered_json& json, ModelConfig& config) const = 0;
  // The layer plan. REQUIRES: `config` came from Parse.
  virtual ModelPlan Plan(const ModelConfig& config) const = 0;
  // The matrices of one routed-expert record, in record order: 2-D matrices
  // take `format`, 1-D tensors (biases) are f32.
  virtual std::vector<TensorSpec> ExpertMatrices(const ModelConfig& config,
                                                 TensorFormat format) const = 0;
  // Where record matrix `matrix` (a name from ExpertMatrices) of one expert
  // comes from in the release's checkpoint.
  virtual CheckpointSlice ExpertSlice(const ModelConfig& config, uint32_t layer, uint32_t expert,
                                      std::string_view matrix) const = 0;
  // Whether the family's block-FP8 release (quant_method fp8) stores trunk
  // matrix `name` in FP8, before its modules_to_not_convert: by default every
  // matrix of the layers (attention, dense MLPs, shared experts), never the
  // embedding or the head. Routers and vectors are never asked (f32).
  virtual bool ReleaseBlockQuantizes(std::string_view name) const;
  // Release tensors the converter keeps verbatim in the container for a later
  // use (computed/convert/kept_tensors.h); none by default.
  virtual std::optional<KeptTensorsRule> KeptTensors() const { return std::nullopt; }
};

// The family of `arch`.
const ModelFamily& FamilyOf(Architecture arch);
// Every family, in Architecture order: the registry (family.cc).
std::span<const ModelFamily* const> AllFamilies();

// FamilyOf(arch).name().
std::string_view ArchitectureName(Architecture arch);
// The family whose model_types() has `model_type`; an error lists them all.
absl::StatusOr<Architecture> ParseArchitecture(std::string_view model_type);

}  // namespace warp::computed
