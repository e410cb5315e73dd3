#include "computed/model/family.h"

#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "computed/model/families/deepseek_v3.h"
#include "computed/model/families/deepseek_v4.h"
#include "computed/model/families/deepseek_v41.h"
#include "computed/model/families/glm4_moe.h"
#include "computed/model/families/glm5_next.h"
#include "computed/model/families/gpt_oss.h"
#include "computed/model/families/kimi_k3.h"
#include "computed/model/families/kimi_linear.h"
#include "computed/model/families/mixtral.h"
#include "computed/model/families/qwen3_moe.h"

namespace warp::computed {

bool ModelFamily::ReleaseBlockQuantizes(std::string_view name) const {
  return name.find("layers.") != std::string_view::npos;
}

namespace {

// The registry: one row per family, in Architecture order (checked at first use).
const ModelFamily* const* Families() {
  static const ModelFamily* const kFamilies[] = {
      &DeepseekV3Family(), &Qwen3MoeFamily(),  &Glm4MoeFamily(),
      &MixtralFamily(),    &GptOssFamily(),    &KimiLinearFamily(),
      &KimiK3Family(),     &DeepseekV4Family(), &Glm5NextFamily(),
      &DeepseekV41Family(),
  };
  static_assert(std::size(kFamilies) == kNumArchitectures);
  return kFamilies;
}

}  // namespace

std::span<const ModelFamily* const> AllFamilies() { return {Families(), kNumArchitectures}; }

const ModelFamily& FamilyOf(Architecture arch) {
  const ModelFamily& family = *AllFamilies()[static_cast<size_t>(arch)];
  WARP_CHECK(family.arch() == arch);
  return family;
}

std::string_view ArchitectureName(Architecture arch) { return FamilyOf(arch).name(); }

absl::StatusOr<Architecture> ParseArchitecture(std::string_view model_type) {
  std::vector<std::string> known;
  for (const ModelFamily* family : AllFamilies()) {
    for (std::string_view type : family->model_types()) {
      if (type == model_type) return family->arch();
      known.emplace_back(type);
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("architecture \"", std::string(model_type),
                                                 "\" is not supported (supported: ",
                                                 absl::StrJoin(known, ", "), ")"));
}

}  // namespace warp::computed
