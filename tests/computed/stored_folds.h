#pragma once

// A container's early-route folds (EarlyRouteFoldSpecs), as `computed convert`
// and `computed synth` write them, against the fold the engine makes at load
// from the same trunk: the same bits, one fold for every layer that routes
// early and none elsewhere.

#include <cstring>
#include <filesystem>
#include <vector>

#include "common/compute/compute_context.h"
#include "common/format/container.h"
#include "computed/engine/early_route.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp::computed {

inline void ExpectStoredFoldsAreTheFoldsMadeAtLoad(const std::filesystem::path& model) {
  auto container = Container::Open(model);
  WARP_ASSERT_OK(container);
  auto weights = TrunkWeights::Load(**container);
  WARP_ASSERT_OK(weights);
  auto config =
      ParseModelConfig((*container)->manifest().architecture, (*container)->manifest().config);
  WARP_ASSERT_OK(config);
  const ModelPlan plan = PlanOf(*config);
  ThreadPool threads(3);
  ComputeContext compute(threads, Arithmetic{});
  uint32_t folds = 0;
  for (const LayerPlan& layer : plan.layers) {
    const TensorEntry* stored = (*weights)->Find(EarlyRouteFoldName(layer));
    ASSERT_EQ(stored != nullptr, HasEarlyRoute(plan, layer)) << layer.ffn.router_weight;
    if (stored == nullptr) continue;
    const std::vector<float> folded = FoldRouterThroughOutput(
        (*weights)->Matrix(layer.ffn.router_weight), (*weights)->Vector(layer.post_norm),
        (*weights)->Matrix(layer.mixer.prefix + "o_proj.weight"), compute);
    const kernels::MatrixView view = (*weights)->Matrix(EarlyRouteFoldName(layer));
    ASSERT_EQ(folded.size(), view.rows * view.cols);
    EXPECT_EQ(std::memcmp(folded.data(), view.data, folded.size() * sizeof(float)), 0)
        << EarlyRouteFoldName(layer);
    ++folds;
  }
  EXPECT_EQ(folds, EarlyRouteFoldSpecs(*config).size());
}

}  // namespace warp::computed
