#include "computed/model/layer_plan.h"

#include <algorithm>

namespace warp::computed {

uint64_t HeldPositions(uint64_t context, uint32_t window) {
  return window == 0 ? context : std::min<uint64_t>(context, uint64_t{window} + kSlidingRewindSlack);
}

uint64_t MixerStateBytes(const ModelConfig& c, const MixerPlan& plan, uint64_t context) {
  switch (plan.kind) {
    case MixerKind::kMla:  // the normalized latent and the rotated rope key
      return context * (uint64_t{c.kv_lora_rank} + c.qk_rope_head_dim) * sizeof(float);
    case MixerKind::kGqa: {  // K and V per kv head; a sliding layer keeps only its window
      return HeldPositions(context, plan.sliding_window) * 2 * uint64_t{c.num_kv_heads} * c.head_dim * sizeof(float);
    }
  }
  return 0;
}

}  // namespace warp::computed
