#pragma once

// Offline expert-cache policy simulator on recorded routing traces: the hit
// rate of LRU, LFRU, ARC and DUEL (the runtime's own eviction orders,
// warp::LruOrder, warp::LfruOrder, warp::ArcOrder and warp::DuelOrder) and Belady's MIN at a budget counted in records (all
// records of a model are the same size).
//
// Trace format (`computed run --trace FILE`): one line per token per MoE layer,
// "POSITION LAYER E1,E2,..." with the experts in routing-rank order; lines whose
// first non-blank character is '#' are comments, blank lines are skipped. Every
// (layer, expert) of a line is one demand access of one record, in file order.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/store/eviction_order.h"

namespace warp::bench {

struct TraceAccess {
  uint32_t layer = 0;
  uint32_t expert = 0;
  friend bool operator==(const TraceAccess&, const TraceAccess&) = default;
};

// One line of a trace: the experts one token was routed to in one layer.
struct TraceLine {
  uint32_t layer = 0;
  std::vector<uint32_t> experts;  // in routing-rank order, distinct
};

enum class Policy {
  kLru,   // warp::LruOrder: evict the least recently used record
  kLfru,  // warp::LfruOrder with demand accesses: lowest aged frequency, then LRU
  kArc,   // warp::ArcOrder: adaptive between recency and frequency
  kDuel,  // warp::DuelOrder: whichever of LFRU, LRU and ARC hits most lately
  // Belady's offline optimum for demand caching: every miss is admitted and
  // evicts the resident record whose next use is farthest in the future.
  kMin,
};

const char* PolicyName(Policy policy);

// Parses trace text; `name` (a path) prefixes errors as "name:LINE: ...".
absl::StatusOr<std::vector<TraceLine>> ParseTraceLines(std::string_view text,
                                                       std::string_view name);
// The same, as accesses in file order.
absl::StatusOr<std::vector<TraceAccess>> ParseTrace(std::string_view text, std::string_view name);

// Reads and parses the trace file at `path`.
absl::StatusOr<std::vector<TraceLine>> ReadTraceLines(const std::string& path);
absl::StatusOr<std::vector<TraceAccess>> ReadTrace(const std::string& path);

// Every line's experts as accesses, in order.
std::vector<TraceAccess> Flatten(const std::vector<TraceLine>& lines);

// Number of distinct (layer, expert) records in `accesses`.
uint64_t DistinctRecords(const std::vector<TraceAccess>& accesses);

// Number of accesses that hit a cache of `capacity_records` records, starting empty.
uint64_t CountHits(Policy policy, const std::vector<TraceAccess>& accesses,
                   uint64_t capacity_records);

// CountHits / accesses.size(); 0 for an empty trace.
double HitRate(Policy policy, const std::vector<TraceAccess>& accesses, uint64_t capacity_records);

// How shard daemons split the records (issue 47, "caches that add up").
enum class Placement {
  kModulo,  // expert e on shard e % N, every layer (expertd --shard I/N)
  kHeat,    // expertd shard --usage: per layer, the experts by decreasing access
            // count, each to the shard with the fewest accesses so far that has
            // room for it (each shard keeps as many experts as e % N gives it)
};

// Hits of `num_shards` caches of `capacity_each` records, each seeing only
// the accesses of the records its shard owns, summed: what N daemons of
// budget B hit together, to set against one cache of N x B.
uint64_t CountShardedHits(Policy policy, const std::vector<TraceAccess>& accesses,
                          uint32_t num_shards, uint64_t capacity_each, Placement placement);

// The largest shard's share of the accesses (1 / num_shards when even).
double LargestShardShare(const std::vector<TraceAccess>& accesses, uint32_t num_shards,
                         Placement placement);

// A synthetic routing trace: for each token and each layer in turn, `top_k`
// distinct experts drawn without replacement with Zipf(s) popularity (weight
// 1 / rank^s) over a per-layer random permutation of the experts, listed in
// draw (rank) order. Deterministic for a given seed.
struct ZipfTraceOptions {
  uint32_t experts = 0;
  uint32_t layers = 0;
  uint32_t top_k = 0;
  uint64_t tokens = 0;
  double s = 1.0;
  uint64_t seed = 1;
};
// REQUIRES: 0 < top_k <= experts, s >= 0.
std::vector<TraceLine> ZipfTraceLines(const ZipfTraceOptions& options);
std::vector<TraceAccess> ZipfTrace(const ZipfTraceOptions& options);

// Replays a trace through the runtime's RecordCache (one record, one unit of
// capacity), layer step by layer step as the engine reads: a step is a run of
// lines of one layer (a token's layer in decode, a prefill chunk's), whose
// records stay pinned until the step ends. With `foresight`, before each step
// the next step's experts (the next layer of the same tokens) are predicted
// as the router lookahead does: each right with probability `recall`, else a
// random expert of that layer; the resident predicted records are Foreseen,
// and forgotten when the step has passed. No speculative reads: this measures
// what sparing the predictions in eviction does alone.
struct ForesightOptions {
  bool foresight = false;
  double recall = 1.0;  // in [0, 1]
  uint64_t seed = 1;
};
uint64_t CountCacheHits(EvictionPolicy policy, const std::vector<TraceLine>& lines,
                        uint64_t capacity_records, const ForesightOptions& options);

}  // namespace warp::bench
