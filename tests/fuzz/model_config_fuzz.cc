// config.json validation on its own, where mutations reach the families'
// parsers far faster than through a whole manifest. Input: the model_type on
// the first line, the config.json text after it. A config that passes is run
// through what trusts it: the family's layer plan and the trunk and expert
// tensor lists (a shape that overflows or a layer count in the billions must
// have been refused before here).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/json_depth.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"
#include "nlohmann/json.hpp"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp;
  fuzz::Init();
  const std::string_view input = fuzz::AsText(data, size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  const std::string_view model_type = input.substr(0, newline);
  const std::string_view text = input.substr(newline + 1);
  if (!CheckJsonDepth(text, "config.json").ok()) return 0;
  // As ParseManifest reads it: no exceptions, a parse error is a discarded value.
  const auto config = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded()) return 0;
  absl::StatusOr<computed::ModelConfig> model = computed::ParseModelConfig(model_type, config);
  if (!model.ok()) return 0;
  (void)computed::PlanOf(*model);
  (void)computed::TrunkTensorSpecs(*model, TensorFormat::kBF16);
  (void)computed::ExpertMatrixSpecs(*model, TensorFormat::kBF16);
  return 0;
}
