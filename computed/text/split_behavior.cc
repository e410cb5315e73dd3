#include "computed/text/split_behavior.h"

#include "absl/strings/str_cat.h"

namespace warp::text {
namespace {

struct Part {
  size_t begin;
  size_t end;
  bool is_match;
};

// The whole text as alternating gaps and matches, as tokenizers' Pattern
// find_matches returns it.
std::vector<Part> Cover(size_t text_size, const std::vector<Match>& matches, bool invert) {
  std::vector<Part> parts;
  size_t prev = 0;
  for (const Match& match : matches) {
    if (prev != match.begin) parts.push_back({prev, match.begin, invert});
    parts.push_back({match.begin, match.end, !invert});
    prev = match.end;
  }
  if (prev != text_size || parts.empty()) parts.push_back({prev, text_size, invert});
  return parts;
}

// Folds a delimiter into its neighbour (previous when `into_previous`), as
// MergedWithPrevious / MergedWithNext do. `parts` is in scan order.
std::vector<Part> MergeDelimiters(const std::vector<Part>& parts, bool into_previous) {
  std::vector<Part> out;
  bool previous_match = false;
  for (const Part& part : parts) {
    if (part.is_match && !previous_match && !out.empty()) {
      if (into_previous) {
        out.back().end = part.end;
      } else {
        out.back().begin = part.begin;
      }
    } else {
      out.push_back({part.begin, part.end, false});
    }
    previous_match = part.is_match;
  }
  return out;
}

std::vector<Part> Contiguous(const std::vector<Part>& parts) {
  std::vector<Part> out;
  bool previous_match = false;
  for (const Part& part : parts) {
    if (part.is_match == previous_match && !out.empty()) {
      out.back().end = part.end;
    } else {
      out.push_back({part.begin, part.end, false});
    }
    previous_match = part.is_match;
  }
  return out;
}

std::vector<Part> ApplyBehavior(std::vector<Part> parts, SplitBehavior behavior) {
  switch (behavior) {
    case SplitBehavior::kRemoved:
      return parts;  // matches are dropped by the caller
    case SplitBehavior::kIsolated:
      for (Part& part : parts) part.is_match = false;
      return parts;
    case SplitBehavior::kMergedWithPrevious:
      return MergeDelimiters(parts, /*into_previous=*/true);
    case SplitBehavior::kMergedWithNext: {
      std::vector<Part> reversed(parts.rbegin(), parts.rend());
      std::vector<Part> merged = MergeDelimiters(reversed, /*into_previous=*/false);
      return std::vector<Part>(merged.rbegin(), merged.rend());
    }
    case SplitBehavior::kContiguous:
      return Contiguous(parts);
  }
  return parts;
}

}  // namespace

absl::StatusOr<SplitBehavior> ParseSplitBehavior(std::string_view name) {
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown split behavior \"", std::string(name),
      "\" (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)"));
}

std::vector<std::string> SplitByMatches(std::string_view text, const std::vector<Match>& matches,
                                        bool invert, SplitBehavior behavior) {
  std::vector<std::string> pieces;
  for (const Part& part : ApplyBehavior(Cover(text.size(), matches, invert), behavior)) {
    if (part.is_match || part.end == part.begin) continue;
    pieces.emplace_back(text.substr(part.begin, part.end - part.begin));
  }
  return pieces;
}

}  // namespace warp::text
