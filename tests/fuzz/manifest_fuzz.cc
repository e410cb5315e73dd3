// manifest.json of a container: ParseManifest, then the config.json it
// carries through ParseModelConfig (and, when that passes, the layer plan the
// engine and the planner trust it for), then the same text as the manifest of
// a tiny container through Container::Open, whose cross-file checks (sizes,
// alignment, extents, footers, contained paths) run against real files.

#include <cstddef>
#include <cstdint>

#include "common/format/container.h"
#include "common/format/manifest.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"
#include "computed/planner/planner.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp;
  fuzz::Init();
  const std::string_view text = fuzz::AsText(data, size);
  absl::StatusOr<Manifest> manifest = ParseManifest(text, "fuzz.warp/manifest.json");
  if (manifest.ok()) {
    absl::StatusOr<computed::ModelConfig> config =
        computed::ParseModelConfig(manifest->architecture, manifest->config);
    if (config.ok()) {
      (void)computed::PlanOf(*config);
      (void)computed::ComputePlan(*manifest, 4096);
    }
  }
  const auto& dir = fuzz::TinyContainer("manifest.warp");
  fuzz::WriteFileOrDie(dir / "manifest.json", text);
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir);
  if (container.ok()) {
    for (const BankEntry& bank : (*container)->manifest().banks) {
      (void)(*container)->HeldExperts(bank);
      (void)(*container)->RecordOffset(bank.layer, bank.num_experts - 1);
    }
  }
  return 0;
}
