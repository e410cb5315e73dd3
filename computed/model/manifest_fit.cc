#include "computed/model/manifest_fit.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "computed/model/family.h"
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
  // The converter's folds (optional), of their one shape and format.
  std::unordered_map<std::string, TensorSpec> folds;
  for (TensorSpec& spec : EarlyRouteFoldSpecs(config)) folds[spec.name] = std::move(spec);
  for (const TensorEntry& tensor : manifest.trunk) {
    if (auto fold = folds.find(tensor.name); fold != folds.end()) {
      if (tensor.format != fold->second.format || tensor.shape != fold->second.shape) {
        return absl::FailedPreconditionError(absl::StrCat(
            where, ": trunk tensor ", tensor.name, " is ",
            std::string(TensorFormatName(tensor.format)), " [", absl::StrJoin(tensor.shape, ", "),
            "]; the config's fold is f32 [", absl::StrJoin(fold->second.shape, ", "), "]"));
      }
      continue;
    }
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
