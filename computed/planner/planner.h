#pragma once

// Planner: the memory figures of a model, from its manifest alone, and the
// budget a run gets (DESIGN.md#memory-budget). Knows nothing of files or
// caches; the engine enforces what it decides.
//
// Thread-compatible: pure functions over values.

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"
#include "common/store/engram_store.h"
#include "common/memory/memory_limits.h"

namespace warp::computed {

// Cached working sets the recommended budget holds besides trunk and state:
// enough to keep the experts of the last few tokens resident. A starting
// heuristic until usage.warp (--learn) measures the hot set.
inline constexpr uint64_t kRecommendedWorkingSets = 4;

// MoE layers' records the floor's cache holds at once: the layer being
// computed (its top-k, pinned until each is used) and the next one's, which
// the lookahead and certain reads bring in meanwhile. A token needs one
// layer's records at a time; with room for one layer only, every guess would
// be read into a buffer the cache cannot keep (DESIGN.md, invariant 4).
inline constexpr uint64_t kFloorLayers = 2;

// Inside a memory cgroup the default budget is the room under its limit less
// this margin and the heap buffers of the reads in flight (a record the cache
// cannot take is read into one): what WARP holds outside the budget, its
// scratch, stacks, libraries and allocator slack, 10-80 MiB above the budget
// at the cgroup's peak on the 13 GB K2-shaped benchmark (LEARNED.md); the
// margin keeps that and a governor's reaction time clear of the limit.
inline constexpr uint64_t kCgroupMarginBytes = uint64_t{256} << 20;

// The longest context WARP plans: far beyond every release's positions, low
// enough that no state figure can overflow.
inline constexpr uint64_t kMaxContextTokens = uint64_t{1} << 24;

struct PlanFigures {
  uint64_t trunk_bytes = 0;
  // The early routes' folded routers that the trunk lacks (EarlyRouteBytes),
  // derived at load and resident beside it; 0 unless planned folding them.
  // (Those the converter wrote are trunk bytes.)
  uint64_t fold_bytes = 0;
  uint64_t context_tokens = 0;
  uint32_t sequences = 1;  // conversations, each with a state of its own (serve --parallel)
  uint32_t max_position_embeddings = 0;  // the config's; 0 when it does not say
  uint64_t kv_bytes_per_token = 0;  // one sequence's first token: sliding layers cap what follow
  uint64_t fixed_state_bytes = 0;   // one sequence's recurrent state: the same at any context
  uint64_t kv_bytes = 0;  // the state of every sequence at context_tokens, fixed part included
  uint32_t experts_per_token = 0;
  uint32_t num_moe_layers = 0;
  uint64_t num_records = 0;        // routed experts over all MoE layers
  uint64_t working_set_bytes = 0;  // experts_per_token x record_bytes, summed over MoE layers
  uint64_t max_record_bytes = 0;   // the largest record: one read's buffer
  // One MoE layer's top-k records, each in a cache slot of max_record_bytes:
  // what a token needs at a time.
  uint64_t layer_records_bytes = 0;
  uint64_t floor_cache_bytes = 0;  // kFloorLayers x layer_records_bytes
  uint64_t bank_bytes = 0;         // every record of every bank
  uint64_t floor_bytes = 0;        // fixed + floor_cache_bytes
  uint64_t resident_bytes = 0;     // fixed + bank_bytes: nothing streams
  // min(resident, fixed + 4 working sets), at least the floor
  uint64_t recommended_bytes = 0;
  // DeepSeek V4.1's engram: its tables on disk, the rows and records a token
  // reads (at most), and their cache (EngramStore's default), which is resident.
  uint64_t engram_table_bytes = 0;
  uint64_t engram_rows_per_token = 0;
  uint64_t engram_cache_bytes = 0;

  // What stays in memory besides the expert cache: trunk + folds + KV + the engram's cache.
  uint64_t fixed_bytes() const { return trunk_bytes + fold_bytes + kv_bytes + engram_cache_bytes; }
};

// Errors name `source`, the manifest's path (or a release's config.json).
// `context_tokens` must be in [1, kMaxContextTokens], `sequences` in
// [1, kMaxSequences] (computed/engine/transformer.h). `fold_early_routes`:
// the engine will fold the routers the trunk holds no fold of
// (EarlyRoutes::kFolded).
struct PlanOptions {
  uint64_t context_tokens = 4096;
  std::string_view source = "manifest.json";
  uint32_t sequences = 1;
  bool fold_early_routes = false;
  // The engram tables' cache (--engram-cache-mib), resident beside the trunk.
  uint64_t engram_cache_bytes = EngramStore::Options{}.cache_bytes;
};
absl::StatusOr<PlanFigures> ComputePlan(const Manifest& manifest, const PlanOptions& options);
absl::StatusOr<PlanFigures> ComputePlan(const Manifest& manifest, uint64_t context_tokens,
                                        std::string_view source = "manifest.json",
                                        uint32_t sequences = 1, bool fold_early_routes = false);

struct BudgetDecision {
  uint64_t budget_bytes = 0;  // trunk + kv + cache
  uint64_t cache_bytes = 0;   // what the expert cache may hold
  std::string rule;           // how it was chosen, for the log and `plan`
};

// The default budget, capped at fully resident:
// - where a cgroup limit binds (its room is less than MemAvailable), the room
//   less kCgroupMarginBytes and `reads_in_flight` record buffers: O_DIRECT
//   keeps the experts out of the page cache, so nothing else needs the rest;
// - elsewhere, 3/4 of MemAvailable: the page cache needs the rest (the
//   seeds' paging cliff). The cache takes all of it, not whole working sets:
//   every record more it holds is a miss fewer (docs/ENGINE.md, "The seeds'
//   machines").
// `requested` (--budget) overrides it. Below the floor: FailedPrecondition
// saying how much memory is needed.
absl::StatusOr<BudgetDecision> ResolveBudget(const PlanFigures& plan,
                                             std::optional<uint64_t> requested,
                                             const MemoryLimits& limits,
                                             uint32_t reads_in_flight = 4);

}  // namespace warp::computed
