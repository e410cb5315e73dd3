#include "computed/model/manifest_fit.h"

#include <string>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {

absl::Status CheckManifestFitsConfig(const Manifest& manifest, const ModelConfig& config,
                                     std::string_view source) {
  const std::string where(source);
  for (const BankEntry& bank : manifest.banks) {
    if (bank.layer >= config.num_layers) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": bank of layer ", bank.layer, " is beyond config.num_hidden_layers ",
          config.num_layers, "; every layer the container holds must be used"));
    }
    if (!config.IsMoeLayer(bank.layer)) {
      return absl::FailedPreconditionError(absl::StrCat(where, ": bank of layer ", bank.layer,
                                                        ", which the config makes a dense layer"));
    }
  }
  std::unordered_set<std::string> used;
  for (const TensorSpec& spec : TrunkTensorSpecs(config, TensorFormat::kF32)) {
    used.insert(spec.name);
  }
  for (const TensorEntry& tensor : manifest.trunk) {
    if (!used.contains(tensor.name)) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": trunk tensor ", tensor.name, " is not used by the config (",
                       config.num_layers, " layers of ", std::string(ArchitectureName(config.arch)),
                       "); every tensor the container holds must be used"));
    }
  }
  return absl::OkStatus();
}

}  // namespace warp::computed
