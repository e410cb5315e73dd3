#pragma once

// One head of DeepSeek V4's and V4.1's attention: a query (already rotated)
// against the K = V rows of its sliding window and the compressed entries it
// reads, with the head's sink joining the softmax (then dropped); the output
// is the weighted sum of the same rows.
//
// Thread-safe: a pure function of its arguments.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "computed/engine/layer_state.h"
#include "computed/engine/mixers/dot.h"
#include "computed/engine/ops.h"

namespace warp::computed {

// q [dim] at `pos` over rows [FirstVisible(pos), pos] and entry_of(entries[e]) ([dim] each), into o.
template <class EntryOf>
void AttendWindowAndEntries(const float* q, uint32_t dim, const PositionRows& rows, uint32_t pos,
                            const std::vector<uint32_t>& entries, const EntryOf& entry_of,
                            float sink, float* o) {
  const uint32_t first = rows.FirstVisible(pos);
  const uint32_t sliding = pos + 1 - first;
  std::vector<float> scores(sliding + entries.size() + 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(dim));
  for (uint32_t s = first; s <= pos; ++s) scores[s - first] = Dot(q, rows.Row(0, s), dim) * scale;
  for (size_t e = 0; e < entries.size(); ++e) {
    scores[sliding + e] = Dot(q, entry_of(entries[e]), dim) * scale;
  }
  scores.back() = sink;
  Softmax(scores);
  std::fill(o, o + dim, 0.0f);
  const std::span<const float> weights(scores);
  AddWeightedRows(
      weights.first(sliding),
      [&](size_t k) { return rows.Row(0, first + static_cast<uint32_t>(k)); }, dim, o);
  AddWeightedRows(
      weights.subspan(sliding, entries.size()), [&](size_t e) { return entry_of(entries[e]); },
      dim, o);
}

}  // namespace warp::computed
