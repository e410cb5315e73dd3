#include "computed/run/generation.h"

#include "common/status.h"

namespace warp::computed {

absl::StatusOr<Generated> Generate(Session& session, Sampler& sampler,
                                   std::span<const float> last_logits,
                                   const GenerationLimits& limits,
                                   const std::function<absl::Status(int32_t)>& on_token) {
  Generated generated;
  std::vector<float> logits(last_logits.begin(), last_logits.end());
  while (generated.ids.size() < limits.max_tokens) {
    if (limits.interrupted != nullptr && limits.interrupted->load()) {
      generated.interrupted = true;
      break;
    }
    const int32_t next = sampler.Sample(logits);
    if (limits.stop_ids.contains(next)) {
      generated.stopped = true;
      break;
    }
    generated.ids.push_back(next);
    WARP_RETURN_IF_ERROR(on_token(next));
    if (generated.ids.size() == limits.max_tokens && !limits.feed_last) break;
    WARP_ASSIGN_OR_RETURN(logits, session.Step(next));
  }
  return generated;
}

}  // namespace warp::computed
