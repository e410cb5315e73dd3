#pragma once

// --preload: read every record the expert cache can hold before the first
// token, so that a model whose experts fit in memory computes from its first
// token on instead of reading (and faulting in fresh pages for) its records
// while it decodes. The records stay cached only as long as the cache's
// policy keeps them; with a budget that holds them all, that is the run.
//
// Thread-compatible: call from the thread that opens the session.

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"
#include "common/store/expert_source.h"

namespace warp::computed {

// `keys` in their order, each once, while their records fit in cache_bytes
// together (one that does not fit is skipped, a smaller one after it may);
// a key of no bank (a dense layer, an expert past its bank) is skipped.
std::vector<ExpertKey> FitInCache(const Manifest& manifest, uint64_t cache_bytes,
                                  std::span<const ExpertKey> keys);

// The records to preload: FitInCache of `first` (the learned hottest, in
// order), then every other record by layer and expert.
std::vector<ExpertKey> PreloadSet(const Manifest& manifest, uint64_t cache_bytes,
                                  std::span<const ExpertKey> first);

struct PreloadFigures {
  uint64_t records = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};

// Reads `keys` through `source`, `in_flight` at a time, and returns when all
// are in; the first record that fails fails the preload, with its error.
absl::StatusOr<PreloadFigures> Preload(ExpertSource& source, std::span<const ExpertKey> keys,
                                       size_t in_flight);

}  // namespace warp::computed
