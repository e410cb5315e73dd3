#pragma once

// Counters of one model's forward passes since it was created.
//
// Thread-compatible value type.

#include <cstdint>

#include "common/store/expert_source.h"

namespace warp::computed {

struct ForwardStats {
  uint64_t tokens = 0;
  uint64_t expert_reads = 0;  // records requested (once per chunk and layer)
  uint64_t expert_read_bytes = 0;
  uint64_t moe_passes = 0;  // MoE layers run, once a pass each
  // Waves the layers' unions were read in (MoeOptions::cache_records): one a
  // MoE pass unless its union outgrows the cache.
  uint64_t expert_waves = 0;
  uint64_t expert_uses = 0;           // (token, expert) pairs computed
  uint64_t token_by_token_bytes = 0;  // what one-token steps would have read: the dedup baseline
  // What each sequence of a batched pass would have read alone (its own
  // union): the baseline of the batch dedup. Equals expert_read_bytes unbatched.
  uint64_t sequence_union_bytes = 0;
  uint64_t certain_reads = 0;  // hash layers' records issued CERTAIN at a chunk's start
  // Records the early routes issued CERTAIN before their layer's router ran
  // (EarlyRoute), and of them those the layer then did not use.
  uint64_t early_routed = 0;
  uint64_t early_unused = 0;
  // Demand records computed row block by row block as their pieces landed.
  uint64_t computed_as_landed = 0;
  // The demand records computed, by how the source served them (Served), and
  // their bytes: hits, a prediction's hits and misses, the same on every transport.
  uint64_t served[kServedKinds] = {};
  uint64_t served_bytes[kServedKinds] = {};
  double seconds_route = 0, seconds_fetch_wait = 0, seconds_expert = 0, seconds_attention = 0,
         seconds_dense = 0;  // per stage, summed over layers
  double seconds_head = 0;   // the embedding, the final norm and the head
  // The engram (DeepSeek V4.1), summed over the passes that read it: from the
  // pass's start (its rows' reads issued) to the last row's arrival, to the
  // first engram layer's start, and how long that layer waited for the rows.
  uint64_t engram_passes = 0;
  double seconds_engram_arrive = 0, seconds_engram_need = 0, seconds_engram_wait = 0;
  uint64_t head_rows = 0;    // rows the head computed logits for

  uint64_t CountOf(Served kind) const { return served[static_cast<size_t>(kind)]; }
  uint64_t BytesOf(Served kind) const { return served_bytes[static_cast<size_t>(kind)]; }
  uint64_t demand_records() const {
    uint64_t sum = 0;
    for (uint64_t n : served) sum += n;
    return sum;
  }
  // Every counter of `after` minus `before` (a phase's share of a run).
  static ForwardStats Delta(const ForwardStats& after, const ForwardStats& before);
  ForwardStats& operator+=(const ForwardStats& other);
};

// What the router lookahead predicted and how it fared.
struct LookaheadStats {
  uint64_t predicted = 0;     // (token, expert) pairs hinted ahead
  uint64_t hits = 0;          // routed pairs that had been hinted
  uint64_t routed = 0;        // routed pairs at layers that had a hint
  uint64_t wasted_bytes = 0;  // hinted records the layer then did not use
};

}  // namespace warp::computed
