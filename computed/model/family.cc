#include "computed/model/family.h"

#include "common/check.h"
#include "computed/model/families/deepseek_v3.h"
#include "computed/model/families/deepseek_v4.h"
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

const ModelFamily& FamilyOf(Architecture arch) {
  switch (arch) {
    case Architecture::kDeepseekV3:
      return DeepseekV3Family();
    case Architecture::kQwen3Moe:
      return Qwen3MoeFamily();
    case Architecture::kGlm4Moe:
      return Glm4MoeFamily();
    case Architecture::kMixtral:
      return MixtralFamily();
    case Architecture::kGptOss:
      return GptOssFamily();
    case Architecture::kKimiLinear:
      return KimiLinearFamily();
    case Architecture::kKimiK3:
      return KimiK3Family();
    case Architecture::kDeepseekV4:
      return DeepseekV4Family();
    case Architecture::kGlm5Next:
      return Glm5NextFamily();
  }
  WARP_CHECK(false);
  return DeepseekV3Family();
}

}  // namespace warp::computed
