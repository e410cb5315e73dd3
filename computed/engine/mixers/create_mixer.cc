#include "computed/engine/mixers/compressed_mqa_attention.h"
#include "computed/engine/mixers/gqa_attention.h"
#include "computed/engine/mixers/kda_attention.h"
#include "computed/engine/mixers/mla_attention.h"
#include "computed/engine/token_mixer.h"

namespace warp::computed {

std::unique_ptr<TokenMixer> CreateMixer(const ModelConfig& config, const MixerPlan& plan,
                                        const TrunkWeights& weights, uint32_t context,
                                        ThreadPool& pool) {
  switch (plan.kind) {
    case MixerKind::kMla:
      return std::make_unique<MlaAttention>(config, plan, weights, context, pool);
    case MixerKind::kGqa:
      return std::make_unique<GqaAttention>(config, plan, weights, context, pool);
    case MixerKind::kKda:
      return std::make_unique<KdaAttention>(config, plan, weights, pool);
    case MixerKind::kCompressedMqa:
      return std::make_unique<CompressedMqaAttention>(config, plan, weights, context, pool);
  }
  return nullptr;
}

}  // namespace warp::computed
