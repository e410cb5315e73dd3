#include "computed/model/layer_plan.h"

#include <algorithm>

namespace warp::computed {

uint64_t HeldPositions(uint64_t context, uint32_t window) {
  return window == 0 ? context
                     : std::min<uint64_t>(context, uint64_t{window} + kSlidingRewindSlack);
}

uint64_t KdaStateFloats(const LinearAttention& kda) {
  const uint64_t width = uint64_t{kda.num_heads} * kda.head_dim;
  return width * kda.head_dim + (kda.conv_kernel - 1) * 3 * width;
}

namespace {

// A KvCompressor's entries for `context` positions, and its open window
// (kv and gate rows, with overlap the last window's first halves) twice:
// the window and its chat checkpoint.
uint64_t CompressorFloats(uint64_t context, uint32_t dim, uint32_t rate, bool overlap) {
  const uint64_t width = overlap ? 2 * uint64_t{dim} : dim;
  const uint64_t open = 2 * uint64_t{rate} * width + (overlap ? 2 * uint64_t{rate} * dim : 0);
  return context / rate * dim + 2 * open;
}

}  // namespace

uint64_t MixerStateBytes(const ModelConfig& c, const MixerPlan& plan, uint64_t context) {
  switch (plan.kind) {
    case MixerKind::kMla:  // the normalized latent and the rotated rope key (DSA: + index keys,
                           // gates)
      return context *
             (uint64_t{c.kv_lora_rank} + c.qk_rope_head_dim +
              (plan.dsa_indexer ? 2 * uint64_t{c.dsa.index_head_dim} : 0)) *
             sizeof(float);
    case MixerKind::kGqa: {  // K and V per kv head; a sliding layer keeps only its window
      return HeldPositions(context, plan.sliding_window) * 2 * uint64_t{c.num_kv_heads} *
             c.head_dim * sizeof(float);
    }
    case MixerKind::kKda:  // independent of the context: the state and its chat checkpoint
      return 2 * KdaStateFloats(c.linear_attention) * sizeof(float);
    case MixerKind::kCompressedMqa: {  // the K = V ring, compressed entries, open windows
      uint64_t floats = HeldPositions(context, plan.sliding_window) * c.head_dim;
      if (plan.compression != CompressionKind::kNone) {
        const bool csa = plan.compression == CompressionKind::kCsa;
        floats += CompressorFloats(context, c.head_dim, plan.compress_rate, csa);
        if (csa) {
          floats +=
              CompressorFloats(context, c.compressed.index_head_dim, plan.compress_rate, true);
        }
      }
      return floats * sizeof(float);
    }
  }
  return 0;
}

}  // namespace warp::computed
