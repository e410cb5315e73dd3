#include "computed/convert/early_route_folds.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>

#include "common/compute/compute_context.h"
#include "common/status.h"
#include "computed/engine/early_route.h"
#include "computed/model/layer_plan.h"

namespace warp::computed {

absl::Status WriteEarlyRouteFolds(ContainerWriter& writer, const ModelConfig& model,
                                  TensorFormat trunk_format, const StoredTrunkTensor& stored) {
  const std::vector<TensorSpec> folds = EarlyRouteFoldSpecs(model);
  if (folds.empty()) return absl::OkStatus();
  std::unordered_map<std::string, TensorSpec> trunk;
  for (TensorSpec& spec : TrunkTensorSpecs(model, trunk_format)) {
    trunk[spec.name] = std::move(spec);
  }
  ThreadPool threads(std::max(1u, std::thread::hardware_concurrency()));
  ComputeContext compute(threads, Arithmetic{});
  const ModelPlan plan = PlanOf(model);
  for (const LayerPlan& layer : plan.layers) {
    if (!HasEarlyRoute(plan, layer)) continue;
    const std::string name = EarlyRouteFoldName(layer);
    const auto spec = std::find_if(folds.begin(), folds.end(),
                                   [&](const TensorSpec& fold) { return fold.name == name; });
    if (spec == folds.end()) continue;
    WARP_ASSIGN_OR_RETURN(StoredTensor router, stored(trunk.at(layer.ffn.router_weight)));
    WARP_ASSIGN_OR_RETURN(StoredTensor gain, stored(trunk.at(layer.post_norm)));
    WARP_ASSIGN_OR_RETURN(
        StoredTensor output,
        stored(trunk.at(OutputProjectionTensor(model, layer.mixer)->name)));
    const std::vector<float> folded = FoldRouterThroughOutput(
        router.view(), {reinterpret_cast<const float*>(gain.data.data()), gain.data.size() / 4},
        output.view(), compute);
    const auto bytes = std::as_bytes(std::span(folded));
    WARP_RETURN_IF_ERROR(writer.AddTrunkTensor(
        *spec,
        [&](uint64_t offset, std::span<std::byte> out) {
          std::memcpy(out.data(), bytes.data() + offset, out.size());
        },
        [](uint64_t, std::span<std::byte>) {}));
  }
  return absl::OkStatus();
}

}  // namespace warp::computed
