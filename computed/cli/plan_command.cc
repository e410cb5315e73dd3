// computed plan MODEL.warp [--context N] [--parallel N] [--budget SIZE] [--ram SIZE]
// computed plan --config RELEASE/config.json ...: before converting, as the
// container of that release with its experts native would be.
// Reads only the manifest (or the config).

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/format/container.h"
#include "common/format/engram_table.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/memory/memory_limits.h"
#include "common/status.h"
#include "computed/cli/commands.h"
#include "computed/engine/transformer.h"
#include "computed/planner/planner.h"
#include "computed/synth/planned_release.h"

namespace warp::computed {
namespace {

struct PlanFlags {
  std::string model;
  std::string config;              // --config: a release's config.json instead of a container
  std::string ram;                 // --ram: plan for a machine with this much memory
  std::string experts = "native";  // --config: as `computed convert --experts/--trunk`
  std::string trunk = "native";
  uint64_t context = 4096;
  uint32_t parallel = 1;  // sequences, each with its state (serve --parallel)
  std::string budget;
  uint32_t daemons = 0;  // local expertd daemons that will hold the cache
  uint64_t engram_cache_mib = EngramStore::Options{}.cache_bytes >> 20;
};

void PrintRow(std::string_view name, uint64_t bytes, std::string_view detail) {
  std::printf("%-13s %12s  %s\n", std::string(name).c_str(), FormatBytes(bytes).c_str(),
              std::string(detail).c_str());
}

void PrintPlan(const Manifest& manifest, const PlanFigures& plan) {
  const uint64_t record_bytes = manifest.banks.empty() ? 0 : manifest.banks.front().record_bytes;
  std::printf("model         %s, %u MoE layers x %llu experts, top-%u, fingerprint %s\n",
              manifest.architecture.c_str(), plan.num_moe_layers,
              static_cast<unsigned long long>(
                  plan.num_moe_layers ? plan.num_records / plan.num_moe_layers : 0),
              plan.experts_per_token, FingerprintHex(manifest.fingerprint).c_str());
  PrintRow("trunk", plan.trunk_bytes, "dense weights, resident");
  const uint64_t growing = plan.kv_bytes / plan.sequences - plan.fixed_state_bytes;
  const bool linear = growing == plan.context_tokens * plan.kv_bytes_per_token;
  std::string state =
      linear ? absl::StrCat(plan.context_tokens, " tokens x ", plan.kv_bytes_per_token, " B")
             : absl::StrCat(plan.context_tokens, " tokens; sliding layers hold their window", " (",
                            plan.kv_bytes_per_token, " B for the first token)");
  if (plan.fixed_state_bytes > 0) {
    absl::StrAppend(&state, " + ", FormatBytes(plan.fixed_state_bytes),
                    " recurrent state at any context (with its chat checkpoint)");
  }
  if (plan.sequences > 1) state = absl::StrCat(plan.sequences, " sequences x (", state, ")");
  PrintRow("kv/state", plan.kv_bytes, state);
  PrintRow("working set", plan.working_set_bytes,
           absl::StrCat(plan.experts_per_token, " experts x ", plan.num_moe_layers,
                        " MoE layers x ", record_bytes, " B records, per token"));
  PrintRow("banks", plan.bank_bytes, absl::StrCat(plan.num_records, " records on disk"));
  if (plan.engram_table_bytes > 0) {
    PrintRow("engram", plan.engram_table_bytes,
             absl::StrCat("tables on disk; ", plan.engram_rows_per_token,
                          " rows a token (one 4 KiB record each at most, ",
                          FormatBytes(plan.engram_rows_per_token * kEngramRecordBytes),
                          "), read when it is sampled"));
    PrintRow("engram cache", plan.engram_cache_bytes,
             "resident, apart from the experts' (--engram-cache-mib)");
  }
  PrintRow("floor", plan.floor_bytes,
           absl::StrCat("trunk + kv + ", kFloorLayers, " MoE layers' records (",
                        plan.experts_per_token, " x ", plan.max_record_bytes,
                        " B each): the layer computed, the next one's reads in flight"));
  PrintRow("recommended", plan.recommended_bytes,
           absl::StrCat("trunk + kv + ", kRecommendedWorkingSets,
                        " working sets, at most resident (", FormatBytes(plan.resident_bytes),
                        ")"));
}

absl::StatusOr<Manifest> PlannedFromConfig(const PlanFlags& flags, std::string& formats) {
  const std::string& path = flags.config;
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, path));
  const nlohmann::ordered_json config = nlohmann::ordered_json::parse(text, nullptr, false);
  WARP_ASSIGN_OR_RETURN(PlannedRelease planned,
                        PlanRelease(config, {.experts = flags.experts, .trunk = flags.trunk}, path));
  formats = std::move(planned.formats);
  return std::move(planned.manifest);
}

absl::StatusOr<Manifest> ReadManifest(const std::string& model) {
  // Only the manifest: plan must stay instant on a 1 TB model.
  const std::filesystem::path manifest_path = std::filesystem::path(model) / kManifestFile;
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(manifest_path));
  return ParseManifest(text, manifest_path.string());
}

absl::Status Run(const PlanFlags& flags) {
  if (flags.model.empty() == flags.config.empty()) {
    return absl::InvalidArgumentError("give either MODEL.warp or --config config.json");
  }
  std::string formats;
  auto manifest =
      flags.config.empty() ? ReadManifest(flags.model) : PlannedFromConfig(flags, formats);
  if (!manifest.ok()) return manifest.status();
  if (!formats.empty()) std::printf("formats       %s\n", formats.c_str());
  const std::string source = flags.config.empty()
                                 ? (std::filesystem::path(flags.model) / kManifestFile).string()
                                 : flags.config;
  auto plan = ComputePlan(*manifest, {.context_tokens = flags.context,
                                      .source = source,
                                      .sequences = flags.parallel,
                                      .engram_cache_bytes = flags.engram_cache_mib << 20});
  if (!plan.ok()) return plan.status();
  PrintPlan(*manifest, *plan);

  auto limits = ReadMemoryLimits();
  if (!limits.ok()) return limits.status();
  if (!flags.ram.empty()) {  // a machine of that size, all of it free, no cgroup
    auto ram = ParseByteSize(flags.ram);
    if (!ram.ok()) return ram.status();
    limits = MemoryLimits{.mem_total_bytes = *ram,
                          .mem_available_bytes = *ram,
                          .assumed = absl::StrCat("--ram ", flags.ram)};
  }
  std::optional<uint64_t> requested;
  if (!flags.budget.empty()) {
    auto parsed = ParseByteSize(flags.budget);
    if (!parsed.ok()) return parsed.status();
    requested = *parsed;
  }
  auto decision = ResolveBudget(*plan, requested, *limits);
  if (!decision.ok()) return decision.status();
  PrintRow(requested ? "budget" : "default", decision->budget_bytes,
           absl::StrCat(decision->rule, "; expert cache ", FormatBytes(decision->cache_bytes)));
  if (flags.daemons > 0) {
    // With local daemons the cache lives in them: computed keeps trunk + KV,
    // and each daemon gets an even share (expertd shard's default e % N split).
    PrintRow("per daemon", decision->cache_bytes / flags.daemons,
             absl::StrCat("--budget of each of ", flags.daemons,
                          " local expertd daemons; computed keeps trunk + kv"));
  }
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddPlanCommand(CLI::App& app) {
  auto flags = std::make_shared<PlanFlags>();
  CLI::App* cmd = app.add_subcommand("plan", "Print the memory plan of a model (manifest only)");
  cmd->add_option("model", flags->model, "MODEL.warp");
  cmd->add_option("--config", flags->config,
                  "Plan a release from its config.json instead, experts as convert keeps them");
  cmd->add_option("--ram", flags->ram, "Plan for a machine with this much memory, e.g. 64G");
  cmd->add_option("--experts", flags->experts, "With --config: native|bf16|q8|q4|vq3r, as convert")
      ->capture_default_str();
  cmd->add_option("--trunk", flags->trunk,
                  "With --config: native (the release's own: FP8 where it ships FP8)|bf16|q8|q4|"
                  "mixed, as convert")
      ->capture_default_str();
  cmd->add_option("--context", flags->context, "Context length in tokens")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, kMaxContextTokens));
  cmd->add_option("--parallel", flags->parallel,
                  "Conversations served at once (serve --parallel): each holds the state")
      ->capture_default_str()
      ->check(CLI::Range(1u, kMaxSequences));
  cmd->add_option("--budget", flags->budget, "Check this budget instead of the default, e.g. 8G");
  cmd->add_option("--engram-cache-mib", flags->engram_cache_mib,
                  "The engram tables' cache the run will have (DeepSeek V4.1), as run's flag");
  cmd->add_option("--daemons", flags->daemons,
                  "Split the expert cache across this many local expertd daemons");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
