#pragma once

// ReleaseFormats: the number formats a Hugging Face release ships its weights
// in, read from its config.json (quantization_config, expert_dtype, the torch
// dtype): what `computed convert` keeps natively, so that `computed plan
// --config` sizes a release before it is downloaded as the converter will
// write it. A quantization_config WARP does not convert is refused by name.
//
// Thread-compatible value type.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/tensor_format.h"
#include "computed/model/family.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

struct ReleaseFormats {
  TensorFormat experts = TensorFormat::kBF16;  // the routed experts' matrices
  TensorFormat dense = TensorFormat::kBF16;    // every unquantized matrix (torch dtype)
  // quant_method fp8: linear weights of the layers in E4M3 blocks of
  // weight_block_size, 128x128 or 32x32 (F32 or UE8M0 scales; the container
  // keeps F32), but for `not_converted`; `fp8` is the format of those blocks.
  bool block_fp8 = false;
  TensorFormat fp8 = TensorFormat::kF8E4M3B128;
  std::vector<std::string> not_converted;  // modules_to_not_convert
  // The config says how the experts are stored (a quantization_config or an
  // expert_dtype), not only the torch dtype: the converter holds the
  // checkpoint's tensors to it.
  bool declares_experts = false;
  std::string description;  // "FP8 E4M3 128x128 blocks (UE8M0 scales), experts mxfp4_b32", for plan

  // The format `convert --trunk native` keeps trunk matrix `name` in (a
  // 2-D tensor that is not precision-critical), by `family`'s rule for which
  // of its matrices a block-FP8 release quantizes.
  TensorFormat TrunkMatrix(const ModelFamily& family, std::string_view name) const;
};

// Errors name `source` and the config's field and value.
absl::StatusOr<ReleaseFormats> ReadReleaseFormats(const nlohmann::ordered_json& config,
                                                  std::string_view source);

// Whether module `module` (a tensor's name without ".weight") is one that
// `pattern` of a modules_to_not_convert list names: the pattern's
// dot-separated parts ("*" matching any one part) found as consecutive parts
// of the module's name, as transformers matches them.
bool ModuleMatches(std::string_view module, std::string_view pattern);

}  // namespace warp::computed
