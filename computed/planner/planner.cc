#include "computed/planner/planner.h"

#include <algorithm>
#include <string>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/checked_math.h"
#include "common/format/engram_table.h"
#include "common/store/engram_store.h"
#include "common/status.h"
#include "computed/engine/transformer.h"
#include "computed/model/manifest_fit.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {
namespace {

// The bytes of the folds (f32) that `manifest`'s trunk lacks: what folding
// early routes at load adds beside the trunk. Here, not in engine/early_route:
// the planner reads manifests alone (the fuzz build links no engine).
uint64_t EarlyRouteBytes(const ModelConfig& config, const Manifest& manifest) {
  std::unordered_set<std::string> stored;
  for (const TensorEntry& tensor : manifest.trunk) stored.insert(tensor.name);
  uint64_t bytes = 0;
  for (const TensorSpec& spec : EarlyRouteFoldSpecs(config)) {
    if (!stored.contains(spec.name)) bytes += DataBytes(spec.format, spec.shape);
  }
  return bytes;
}

// Accumulates byte counts, remembering the first that overflowed 64 bits.
class SizeSum {
 public:
  explicit SizeSum(std::string_view source) : source_(source) {}

  void Add(uint64_t& total, uint64_t bytes, std::string_view what) {
    std::optional<uint64_t> sum = CheckedAdd(total, bytes);
    if (!sum) return Overflow(what);
    total = *sum;
  }
  void AddProduct(uint64_t& total, uint64_t count, uint64_t bytes, std::string_view what) {
    std::optional<uint64_t> product = CheckedMul(count, bytes);
    if (!product) return Overflow(what);
    Add(total, *product, what);
  }
  absl::Status status() const { return status_; }

 private:
  void Overflow(std::string_view what) {
    if (!status_.ok()) return;
    status_ = absl::InvalidArgumentError(absl::StrCat(
        source_, ": the ", std::string(what), " bytes overflow 64 bits: its sizes are corrupt"));
  }

  std::string source_;
  absl::Status status_;
};

}  // namespace

absl::StatusOr<PlanFigures> ComputePlan(const Manifest& manifest, uint64_t context_tokens,
                                        std::string_view source, uint32_t sequences,
                                        bool fold_early_routes) {
  return ComputePlan(manifest, PlanOptions{.context_tokens = context_tokens,
                                           .source = source,
                                           .sequences = sequences,
                                           .fold_early_routes = fold_early_routes});
}

absl::StatusOr<PlanFigures> ComputePlan(const Manifest& manifest, const PlanOptions& options) {
  const uint64_t context_tokens = options.context_tokens;
  const std::string_view source = options.source;
  const uint32_t sequences = options.sequences;
  const bool fold_early_routes = options.fold_early_routes;
  WARP_ASSIGN_OR_RETURN(ModelConfig model,
                        ParseModelConfig(manifest.architecture, manifest.config, source));
  WARP_RETURN_IF_ERROR(CheckManifestFitsConfig(manifest, model, source));
  if (context_tokens == 0 || context_tokens > kMaxContextTokens) {
    return absl::InvalidArgumentError(absl::StrCat(
        "context of ", context_tokens, " tokens is not in [1, ", kMaxContextTokens, "]"));
  }
  if (sequences == 0 || sequences > kMaxSequences) {
    return absl::InvalidArgumentError(
        absl::StrCat(sequences, " sequences is not in [1, ", kMaxSequences, "]"));
  }
  PlanFigures plan;
  plan.sequences = sequences;
  plan.trunk_bytes = manifest.trunk_bytes;
  plan.context_tokens = context_tokens;
  plan.max_position_embeddings = model.max_position_embeddings;
  // Every sum and product below is checked: the counts come from a file.
  SizeSum sum(source);
  // State per layer as the mixers keep it: a sliding layer holds only its
  // window, a recurrent (KDA) layer the same bytes at any context. The
  // config's dimensions are bounded (model_config.h), so each layer's figure
  // fits; their sums are checked.
  uint64_t kv_per_sequence = 0;
  for (const LayerPlan& layer : PlanOf(model).layers) {
    const uint64_t fixed = MixerStateBytes(model, layer.mixer, 0);
    sum.Add(plan.fixed_state_bytes, fixed, "recurrent state");
    sum.Add(plan.kv_bytes_per_token, MixerStateBytes(model, layer.mixer, 1) - fixed, "KV");
    sum.Add(kv_per_sequence, MixerStateBytes(model, layer.mixer, context_tokens), "KV");
  }
  sum.AddProduct(plan.kv_bytes, sequences, kv_per_sequence, "KV");
  plan.experts_per_token = model.experts_per_token;
  plan.num_moe_layers = static_cast<uint32_t>(manifest.banks.size());
  for (const BankEntry& bank : manifest.banks) {
    plan.num_records += bank.num_experts;
    sum.AddProduct(plan.working_set_bytes, model.experts_per_token, bank.record_bytes,
                   "working set");
    plan.max_record_bytes = std::max(plan.max_record_bytes, bank.record_bytes);
    sum.AddProduct(plan.bank_bytes, bank.num_experts, bank.record_bytes, "banks");
  }
  if (fold_early_routes) plan.fold_bytes = EarlyRouteBytes(model, manifest);
  for (size_t i = 0; i < model.engram.layers.size(); ++i) {
    const EngramTableEntry table{.rows = model.engram.table_rows[i],
                                 .row_bytes = model.engram.head_dim + model.engram.head_dim / 32};
    sum.AddProduct(plan.engram_table_bytes, EngramRecords(table), kEngramRecordBytes, "engram");
    plan.engram_rows_per_token += model.engram.RowsPerToken();
    plan.engram_cache_bytes = options.engram_cache_bytes;
  }
  uint64_t fixed = plan.trunk_bytes;
  sum.Add(fixed, plan.fold_bytes, "floor");
  sum.Add(fixed, plan.kv_bytes, "floor");
  sum.Add(fixed, plan.engram_cache_bytes, "floor");
  // Every cache slot holds the largest record (ExpertStore).
  sum.AddProduct(plan.layer_records_bytes, plan.experts_per_token, plan.max_record_bytes, "floor");
  sum.AddProduct(plan.floor_cache_bytes, kFloorLayers, plan.layer_records_bytes, "floor");
  plan.floor_bytes = fixed;
  sum.Add(plan.floor_bytes, plan.floor_cache_bytes, "floor");
  plan.resident_bytes = fixed;
  sum.Add(plan.resident_bytes, plan.bank_bytes, "resident");
  uint64_t recommended = fixed;
  sum.AddProduct(recommended, kRecommendedWorkingSets, plan.working_set_bytes, "recommended");
  WARP_RETURN_IF_ERROR(sum.status());
  plan.floor_bytes = std::min(plan.floor_bytes, plan.resident_bytes);
  plan.recommended_bytes =
      std::min(plan.resident_bytes, std::max(plan.floor_bytes, recommended));
  return plan;
}

namespace {

BudgetDecision Decide(const PlanFigures& plan, uint64_t budget, std::string rule) {
  return BudgetDecision{
      .budget_bytes = budget, .cache_bytes = budget - plan.fixed_bytes(), .rule = std::move(rule)};
}

}  // namespace

absl::StatusOr<BudgetDecision> ResolveBudget(const PlanFigures& plan,
                                             std::optional<uint64_t> requested,
                                             const MemoryLimits& limits, uint32_t reads_in_flight) {
  const std::string floor_parts = absl::StrCat(
      "trunk ", FormatBytes(plan.trunk_bytes),
      plan.fold_bytes ? absl::StrCat(" + early routes ", FormatBytes(plan.fold_bytes)) : "",
      " + KV ", FormatBytes(plan.kv_bytes), " for ",
      plan.sequences > 1 ? absl::StrCat(plan.sequences, " sequences of ") : "", plan.context_tokens,
      " tokens + ", kFloorLayers, " MoE layers' records ", FormatBytes(plan.floor_cache_bytes));
  if (requested) {
    // More than the machine (or the cgroup) holds cannot be kept: the cache
    // would page or be killed long before it filled.
    const bool cgroup = limits.assumed.empty() && limits.cgroup_limit_bytes &&
                        *limits.cgroup_limit_bytes < limits.mem_total_bytes;
    const uint64_t memory = cgroup ? *limits.cgroup_limit_bytes : limits.mem_total_bytes;
    if (*requested > memory) {
      return absl::InvalidArgumentError(absl::StrCat(
          "budget ", FormatBytes(*requested), " is above the ", FormatBytes(memory), " of ",
          cgroup                   ? absl::StrCat("the cgroup limit in ", limits.cgroup_source)
          : limits.assumed.empty() ? std::string("this machine (/proc/meminfo MemTotal)")
                                   : limits.assumed));
    }
    if (*requested < plan.floor_bytes) {
      return absl::FailedPreconditionError(
          absl::StrCat("budget ", FormatBytes(*requested), " is below the floor: this model needs ",
                       "at least ", FormatBytes(plan.floor_bytes), " (", floor_parts, ")"));
    }
    return Decide(plan, *requested, "--budget");
  }
  const uint64_t available = limits.available_bytes();
  const bool cgroup_binds =
      limits.assumed.empty() && limits.cgroup_limit_bytes && available < limits.mem_available_bytes;
  if (cgroup_binds) {
    const uint64_t margin = kCgroupMarginBytes + uint64_t{reads_in_flight} * plan.max_record_bytes;
    const uint64_t usable = available > margin ? available - margin : 0;
    const std::string where = absl::StrCat(
        FormatBytes(available), " of room under the cgroup limit in ", limits.cgroup_source,
        " less ", FormatBytes(margin), " (margin + ", reads_in_flight, " read buffers)");
    if (usable < plan.floor_bytes) {
      return absl::FailedPreconditionError(absl::StrCat(
          "not enough memory: this model needs at least ", FormatBytes(plan.floor_bytes), " (",
          floor_parts, "), but ", where, " is ", FormatBytes(usable)));
    }
    const uint64_t budget = std::min(plan.resident_bytes, usable);
    return Decide(
        plan, budget,
        absl::StrCat(budget == plan.resident_bytes ? "fully resident, within " : "", where));
  }
  const uint64_t usable = available / 4 * 3;
  const std::string source = !limits.assumed.empty() ? limits.assumed
                             : limits.cgroup_limit_bytes
                                 ? absl::StrCat("cgroup limit in ", limits.cgroup_source)
                                 : std::string("/proc/meminfo MemAvailable");
  if (usable < plan.floor_bytes) {
    return absl::FailedPreconditionError(
        absl::StrCat("not enough memory: this model needs at least ", FormatBytes(plan.floor_bytes),
                     " (", floor_parts, "), but 3/4 of the ", FormatBytes(available),
                     " available (", source, ") is ", FormatBytes(usable)));
  }
  const uint64_t budget = std::min(plan.resident_bytes, usable);
  return Decide(plan, budget,
                absl::StrCat(budget == plan.resident_bytes ? "fully resident, within " : "",
                             "3/4 of ", FormatBytes(available), " available (", source, ")"));
}

}  // namespace warp::computed
