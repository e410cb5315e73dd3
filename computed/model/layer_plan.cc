#include "computed/model/layer_plan.h"

#include <algorithm>
#include <type_traits>

namespace warp::computed {

uint64_t HeldPositions(uint64_t context, uint32_t window) {
  return window == 0 ? context
                     : std::min<uint64_t>(context, uint64_t{window} + kSlidingRewindSlack);
}

bool EndsInOutputProjection(const MixerPlan& mixer) {
  return std::visit([](const auto& params) { return params.kEndsInOutputProjection; },
                    mixer.params);
}

void ForEachMixerTensor(const ModelConfig& config, const MixerPlan& mixer, TensorVisitor visit) {
  std::visit(
      [&](const auto& params) {
        using Params = std::decay_t<decltype(params)>;
        Params::Tensors::Of(config, mixer.prefix, params).ForEach(visit);
      },
      mixer.params);
}

std::optional<TensorRef> OutputProjectionTensor(const ModelConfig& config,
                                                const MixerPlan& mixer) {
  return std::visit(
      [&](const auto& params) -> std::optional<TensorRef> {
        using Params = std::decay_t<decltype(params)>;
        if constexpr (Params::kEndsInOutputProjection) {
          return Params::Tensors::Of(config, mixer.prefix, params).o;
        } else {
          return std::nullopt;
        }
      },
      mixer.params);
}

uint64_t MixerStateBytes(const ModelConfig& config, const MixerPlan& mixer, uint64_t context) {
  return std::visit([&](const auto& params) { return StateBytes(config, params, context); },
                    mixer.params);
}

}  // namespace warp::computed
