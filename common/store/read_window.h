#pragma once

// How many records a pass may have on their way at once when its cache is a
// fraction of what the pass needs (the per-layer floor, DESIGN.md invariant
// 4): a cache of N slots holds two waves of N / 2, one computing and the
// next one's reads in flight. MoeFfn reads a layer's union in such waves;
// hints (lookahead, early routes, hash layers' certain reads) are cut to one
// wave, since a hint beyond it would evict what the demand is about to use,
// or be read into a buffer the cache cannot keep and dropped.
//
// Thread-compatible: pure functions.

#include <algorithm>
#include <cstdint>
#include <span>

#include "common/store/expert_source.h"

namespace warp {

// Records in one wave for a cache of `cache_records` slots; 0: no bound.
inline uint64_t WaveRecords(uint64_t cache_records) {
  return cache_records == 0 ? 0 : std::max<uint64_t>(1, cache_records / 2);
}

// The first wave of `keys`: what may be hinted ahead at once.
inline std::span<const ExpertKey> FirstWave(std::span<const ExpertKey> keys,
                                            uint64_t cache_records) {
  const uint64_t wave = WaveRecords(cache_records);
  if (wave == 0 || keys.size() <= cache_records) return keys;
  return keys.first(wave);
}

}  // namespace warp
