#pragma once

// Hugging Face's SplitDelimiterBehavior: how a text is cut at the matches of
// a pattern, with the exact folding rules of tokenizers' normalizer.rs.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/regex.h"

namespace warp::text {

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// "Removed", "Isolated", ... as written in tokenizer.json.
absl::StatusOr<SplitBehavior> ParseSplitBehavior(std::string_view name);

// Cuts `text` at `matches` (sorted, non-overlapping); `invert` swaps which
// parts count as the delimiters. Empty pieces are dropped.
std::vector<std::string> SplitByMatches(std::string_view text, const std::vector<Match>& matches,
                                        bool invert, SplitBehavior behavior);

// One single-character match per code point of `text` for which `pred` holds.
template <typename Pred>
std::vector<Match> MatchCodePoints(std::string_view text, Pred&& pred);

}  // namespace warp::text

#include "computed/text/utf8.h"

namespace warp::text {

template <typename Pred>
std::vector<Match> MatchCodePoints(std::string_view text, Pred&& pred) {
  std::vector<Match> matches;
  ForEachCodePoint(text, [&](char32_t code_point, size_t offset, size_t length) {
    if (pred(code_point)) matches.push_back({offset, offset + length});
  });
  return matches;
}

}  // namespace warp::text
