#include "computed/planner/planner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/status.h"
#include "computed/model/model_config.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {

absl::StatusOr<PlanFigures> ComputePlan(const Manifest& manifest, uint64_t context_tokens) {
  WARP_ASSIGN_OR_RETURN(ModelConfig model,
                        ParseModelConfig(manifest.architecture, manifest.config));
  PlanFigures plan;
  plan.trunk_bytes = manifest.trunk_bytes;
  plan.context_tokens = context_tokens;
  // State per layer as the mixers keep it: a sliding layer holds only its
  // window, a recurrent (KDA) layer the same bytes at any context.
  for (const LayerPlan& layer : PlanOf(model).layers) {
    const uint64_t fixed = MixerStateBytes(model, layer.mixer, 0);
    plan.fixed_state_bytes += fixed;
    plan.kv_bytes_per_token += MixerStateBytes(model, layer.mixer, 1) - fixed;
    plan.kv_bytes += MixerStateBytes(model, layer.mixer, context_tokens);
  }
  plan.experts_per_token = model.experts_per_token;
  plan.num_moe_layers = static_cast<uint32_t>(manifest.banks.size());
  for (const BankEntry& bank : manifest.banks) {
    plan.num_records += bank.num_experts;
    plan.working_set_bytes += uint64_t{model.experts_per_token} * bank.record_bytes;
    plan.max_record_bytes = std::max(plan.max_record_bytes, bank.record_bytes);
    plan.bank_bytes += uint64_t{bank.num_experts} * bank.record_bytes;
  }
  plan.floor_bytes = plan.trunk_bytes + plan.kv_bytes + plan.working_set_bytes;
  plan.resident_bytes = plan.trunk_bytes + plan.kv_bytes + plan.bank_bytes;
  plan.recommended_bytes = std::min(
      plan.resident_bytes, plan.floor_bytes + kRecommendedWorkingSets * plan.working_set_bytes);
  return plan;
}

namespace {

BudgetDecision Decide(const PlanFigures& plan, uint64_t budget, std::string rule) {
  return BudgetDecision{.budget_bytes = budget,
                        .cache_bytes = budget - plan.trunk_bytes - plan.kv_bytes,
                        .rule = std::move(rule)};
}

}  // namespace

absl::StatusOr<BudgetDecision> ResolveBudget(const PlanFigures& plan,
                                             std::optional<uint64_t> requested,
                                             const MemoryLimits& limits, uint32_t reads_in_flight) {
  const std::string floor_parts = absl::StrCat(
      "trunk ", FormatBytes(plan.trunk_bytes), " + KV ", FormatBytes(plan.kv_bytes), " for ",
      plan.context_tokens, " tokens + one working set ", FormatBytes(plan.working_set_bytes));
  if (requested) {
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
  const uint64_t working_sets =
      plan.working_set_bytes == 0 ? 0 : (usable - plan.floor_bytes) / plan.working_set_bytes;
  const uint64_t budget =
      std::min(plan.resident_bytes, plan.floor_bytes + working_sets * plan.working_set_bytes);
  return Decide(
      plan, budget,
      absl::StrCat(budget == plan.resident_bytes
                       ? std::string("fully resident")
                       : absl::StrCat("floor + ", working_sets, " working sets"),
                   ", within 3/4 of ", FormatBytes(available), " available (", source, ")"));
}

}  // namespace warp::computed
