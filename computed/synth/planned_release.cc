#include "computed/synth/planned_release.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/family.h"
#include "computed/model/model_config.h"
#include "computed/model/release_formats.h"
#include "computed/model/trunk_choice.h"
#include "computed/synth/presets.h"

namespace warp::computed {
namespace {

absl::StatusOr<TensorFormat> ExpertsFormat(std::string_view name, TensorFormat native) {
  if (name == "native") return native;
  if (name == "bf16") return TensorFormat::kBF16;
  if (name == "q8") return TensorFormat::kQ8B32;
  if (name == "q4") return TensorFormat::kQ4B32;
  if (name == "vq3r") return TensorFormat::kVq3rB32;
  return absl::InvalidArgumentError(
      absl::StrCat("--experts ", std::string(name), ": expected native, bf16, q8, q4 or vq3r"));
}

}  // namespace

absl::StatusOr<PlannedRelease> PlanRelease(const nlohmann::ordered_json& config,
                                           const ReleaseFlags& flags, std::string_view source) {
  if (!config.is_object() || !config.contains("model_type") || !config["model_type"].is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": not a config.json with a model_type"));
  }
  const std::string arch = config["model_type"].get<std::string>();
  WARP_ASSIGN_OR_RETURN(const Architecture architecture, ParseArchitecture(arch));
  WARP_ASSIGN_OR_RETURN(const ReleaseFormats release, ReadReleaseFormats(config, source));
  WARP_ASSIGN_OR_RETURN(const TensorFormat experts, ExpertsFormat(flags.experts, release.experts));
  WARP_ASSIGN_OR_RETURN(const TrunkChoice choice, TrunkChoice::Parse(flags.trunk));
  const ModelFamily& family = FamilyOf(architecture);
  const TrunkFormatOf trunk = [&](const TrunkTensor& tensor) {
    const TensorFormat native = release.TrunkMatrix(family, tensor.spec.name);
    return choice.FormatOf(tensor.kind, native, tensor.spec.shape);
  };
  auto manifest = PlannedManifest(arch, config, experts, trunk);
  if (!manifest.ok()) return Annotate(manifest.status(), source);
  return PlannedRelease{
      .manifest = *std::move(manifest),
      .formats = absl::StrCat("release ", release.description, "; experts ",
                              std::string(TensorFormatName(experts)), ", trunk ", flags.trunk)};
}

}  // namespace warp::computed
