#include "computed/engine/mixers/compressed_mqa_attention.h"
#include "computed/engine/mixers/gqa_attention.h"
#include "computed/engine/mixers/kda_attention.h"
#include "computed/engine/mixers/mla_attention.h"
#include "computed/engine/mixers/shared_compressed_attention.h"
#include "computed/engine/token_mixer.h"

namespace warp::computed {
namespace {

// One factory per alternative of MixerParams: a kind without one does not compile.
struct MixerFactory {
  const ModelConfig& config;
  const MixerPlan& plan;
  const TrunkWeights& weights;
  uint32_t context;
  ComputeContext& compute;
  std::span<const std::unique_ptr<TokenMixer>> earlier;

  std::unique_ptr<TokenMixer> operator()(const GqaParams& params) const {
    return std::make_unique<GqaAttention>(config, plan, params, weights, context, compute);
  }
  std::unique_ptr<TokenMixer> operator()(const MlaParams& params) const {
    return std::make_unique<MlaAttention>(config, plan, params, weights, context, compute);
  }
  std::unique_ptr<TokenMixer> operator()(const KdaParams& params) const {
    return std::make_unique<KdaAttention>(config, plan, params, weights, compute);
  }
  std::unique_ptr<TokenMixer> operator()(const CompressedMqaParams& params) const {
    return std::make_unique<CompressedMqaAttention>(config, plan, params, weights, context, compute);
  }
  std::unique_ptr<TokenMixer> operator()(const SharedCompressedMqaParams& params) const {
    return std::make_unique<SharedCompressedAttention>(config, plan, params, weights, context,
                                                       compute, earlier);
  }
};

}  // namespace

std::unique_ptr<TokenMixer> CreateMixer(const ModelConfig& config, const MixerPlan& plan,
                                        const TrunkWeights& weights, uint32_t context,
                                        ComputeContext& compute,
                                        std::span<const std::unique_ptr<TokenMixer>> earlier) {
  return std::visit(MixerFactory{config, plan, weights, context, compute, earlier}, plan.params);
}

}  // namespace warp::computed
