#pragma once

// The figures of `computed run`'s stats line ("[prefill N tokens .. tok/s:
// experts H hit / M miss P%, L lookahead hits, read X | decode ..]"), summed
// over its phases, for tests that check what a run read.

#include <cstdint>
#include <string>

namespace warp::testing {

struct RunStats {
  int phases = 0;  // prefill and/or decode segments found
  uint64_t tokens = 0;
  uint64_t hits = 0, misses = 0, lookahead_hits = 0, certain_hits = 0;
  double read_bytes = 0;  // what the disk read (or the misses, on the fast path)
  double decode_read_bytes = 0;  // the decode phase's share of read_bytes
  uint64_t decode_tokens = 0, decode_misses = 0;
  // "waves W over P layer passes": a layer's union read in several waves; 0 when absent.
  uint64_t waves = 0, layer_passes = 0;
  // Demand hits over every demand record, in percent (0 without any).
  double hit_percent() const {
    const uint64_t all = hits + misses + lookahead_hits + certain_hits;
    return all ? 100.0 * hits / all : 0.0;
  }
};

// Adds up every phase segment of the first stats line in `output`; phases 0
// when there is none.
RunStats ParseStatsLine(const std::string& output);

}  // namespace warp::testing
