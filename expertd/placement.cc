#include "expertd/placement.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "common/check.h"

namespace warp::expertd {
namespace {

double Weight(const PlacementOptions& options, uint32_t shard) {
  return options.weights.empty() ? 1.0 : options.weights[shard];
}

// Per layer: how often each expert was selected (0 where usage has none).
absl::flat_hash_map<uint32_t, std::vector<uint64_t>> HeatByLayer(
    const std::vector<BankEntry>& banks, const UsageTable& usage) {
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> heat;
  for (const BankEntry& bank : banks) heat[bank.layer].assign(bank.num_experts, 0);
  for (const ExpertUsage& entry : usage.entries) {
    auto it = heat.find(entry.layer);
    if (it != heat.end() && entry.expert < it->second.size()) it->second[entry.expert] = entry.count;
  }
  return heat;
}

// The experts of one layer by heat: hottest first, ties to the lower number;
// each to the least loaded shard (heat per weight) that has room left.
std::vector<uint32_t> PlaceLayerByHeat(const std::vector<uint64_t>& heat, uint32_t num_shards,
                                       const PlacementOptions& options,
                                       std::vector<double>& load) {
  const uint32_t num_experts = static_cast<uint32_t>(heat.size());
  std::vector<uint64_t> room(num_shards, 0);
  for (uint32_t shard : AssignExperts(num_experts, num_shards, options.weights)) ++room[shard];
  std::vector<uint32_t> order(num_experts);
  for (uint32_t e = 0; e < num_experts; ++e) order[e] = e;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return heat[a] > heat[b]; });
  std::vector<uint32_t> owner(num_experts);
  for (uint32_t expert : order) {
    uint32_t best = num_shards;
    for (uint32_t s = 0; s < num_shards; ++s) {
      if (room[s] == 0) continue;
      if (best == num_shards || load[s] / Weight(options, s) < load[best] / Weight(options, best)) {
        best = s;
      }
    }
    owner[expert] = best;
    --room[best];
    load[best] += static_cast<double>(heat[expert]);
  }
  return owner;
}

}  // namespace

std::vector<uint32_t> AssignExperts(uint32_t num_experts, uint32_t num_shards,
                                    const std::vector<double>& weights) {
  WARP_CHECK(num_shards > 0);
  WARP_CHECK(weights.empty() || weights.size() == num_shards);
  std::vector<uint32_t> owner(num_experts);
  std::vector<uint64_t> assigned(num_shards, 0);
  for (uint32_t expert = 0; expert < num_experts; ++expert) {
    uint32_t best = expert % num_shards;
    if (!weights.empty()) {
      best = 0;
      for (uint32_t s = 1; s < num_shards; ++s) {
        // assigned[s] / weights[s] < assigned[best] / weights[best], without dividing.
        if (assigned[s] * weights[best] < assigned[best] * weights[s]) best = s;
      }
    }
    owner[expert] = best;
    ++assigned[best];
  }
  return owner;
}

std::vector<ExpertsByLayer> PlaceExperts(const std::vector<BankEntry>& banks, uint32_t num_shards,
                                         const PlacementOptions& options) {
  WARP_CHECK(options.replica_bytes == 0 || options.usage != nullptr);
  std::vector<ExpertsByLayer> held(num_shards);
  absl::flat_hash_map<uint32_t, std::vector<uint64_t>> heat;
  if (options.usage != nullptr) heat = HeatByLayer(banks, *options.usage);
  // Per layer: each shard's share of the heat, and each expert's holders.
  absl::flat_hash_map<uint32_t, std::vector<double>> load;
  absl::flat_hash_map<uint32_t, std::vector<std::vector<uint32_t>>> holders;
  for (const BankEntry& bank : banks) {
    std::vector<double>& layer_load = load[bank.layer];
    layer_load.assign(num_shards, 0);
    const std::vector<uint32_t> owner =
        options.usage != nullptr
            ? PlaceLayerByHeat(heat[bank.layer], num_shards, options, layer_load)
            : AssignExperts(bank.num_experts, num_shards, options.weights);
    std::vector<std::vector<uint32_t>>& layer_holders = holders[bank.layer];
    layer_holders.resize(bank.num_experts);
    for (uint32_t s = 0; s < num_shards; ++s) held[s][bank.layer];  // listed even if empty
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      layer_holders[expert].push_back(owner[expert]);
    }
  }
  if (options.replica_bytes > 0) {
    std::vector<uint64_t> room(num_shards, options.replica_bytes);
    for (const ExpertUsage& hot : options.usage->Hottest()) {
      const BankEntry* bank = nullptr;
      for (const BankEntry& b : banks) {
        if (b.layer == hot.layer) bank = &b;
      }
      if (hot.count == 0 || bank == nullptr || hot.expert >= bank->num_experts) continue;
      std::vector<uint32_t>& expert_holders = holders[hot.layer][hot.expert];
      std::vector<double>& layer_load = load[hot.layer];
      uint32_t best = num_shards;
      for (uint32_t s = 0; s < num_shards; ++s) {
        if (room[s] < bank->record_bytes ||
            std::find(expert_holders.begin(), expert_holders.end(), s) != expert_holders.end()) {
          continue;
        }
        if (best == num_shards ||
            layer_load[s] / Weight(options, s) < layer_load[best] / Weight(options, best)) {
          best = s;
        }
      }
      if (best == num_shards) continue;
      // The heat is shared evenly: each holder's share drops from c/n to c/(n+1).
      const double count = static_cast<double>(hot.count);
      const double n = static_cast<double>(expert_holders.size());
      for (uint32_t s : expert_holders) layer_load[s] -= count / n - count / (n + 1);
      layer_load[best] += count / (n + 1);
      expert_holders.push_back(best);
      room[best] -= bank->record_bytes;
    }
  }
  for (const BankEntry& bank : banks) {
    const std::vector<std::vector<uint32_t>>& layer_holders = holders[bank.layer];
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      for (uint32_t s : layer_holders[expert]) held[s][bank.layer].push_back(expert);
    }
  }
  return held;
}

}  // namespace warp::expertd
