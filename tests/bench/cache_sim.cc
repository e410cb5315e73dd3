#include "tests/bench/cache_sim.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <vector>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/io/file.h"
#include "common/status.h"
#include "common/store/eviction_order.h"
#include "common/store/record_cache.h"
#include "expertd/placement.h"

namespace warp::bench {
namespace {

uint64_t Pack(const TraceAccess& access) { return (uint64_t{access.layer} << 32) | access.expert; }

// Parses all of `text` as a decimal unsigned integer.
template <typename T>
bool ParseUnsigned(std::string_view text, T* value) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, *value);
  return ec == std::errc() && ptr == end;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    const size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
  return fields;
}

std::string_view Strip(std::string_view line) {
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
    line.remove_suffix(1);
  }
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  return line;
}

// Parses one non-comment line. Returns the reason it is malformed.
absl::Status ParseLine(std::string_view line, TraceLine* parsed) {
  const std::vector<std::string_view> fields = SplitFields(line);
  if (fields.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 'POSITION LAYER E1,E2,...', got ", fields.size(), " fields"));
  }
  uint64_t position = 0;
  if (!ParseUnsigned(fields[0], &position)) {
    return absl::InvalidArgumentError(absl::StrCat("bad position '", std::string(fields[0]), "'"));
  }
  uint32_t layer = 0;
  if (!ParseUnsigned(fields[1], &layer)) {
    return absl::InvalidArgumentError(absl::StrCat("bad layer '", std::string(fields[1]), "'"));
  }
  parsed->layer = layer;
  std::string_view experts = fields[2];
  while (true) {
    const size_t comma = experts.find(',');
    const std::string_view item = experts.substr(0, comma);
    uint32_t expert = 0;
    if (!ParseUnsigned(item, &expert)) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad expert '", std::string(item), "' in '", std::string(fields[2]), "'"));
    }
    if (std::find(parsed->experts.begin(), parsed->experts.end(), expert) !=
        parsed->experts.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("expert ", expert, " repeated in '", std::string(fields[2]), "'"));
    }
    parsed->experts.push_back(expert);
    if (comma == std::string_view::npos) break;
    experts.remove_prefix(comma + 1);
  }
  return absl::OkStatus();
}

// Replays `accesses` as demand reads through the runtime's own eviction order
// (what RecordCache evicts by when nothing is pinned): every miss is admitted,
// evicting the order's first candidate when the cache is full.
uint64_t OrderHits(EvictionPolicy policy, const std::vector<TraceAccess>& accesses,
                   uint64_t capacity) {
  if (capacity == 0) return 0;
  const std::unique_ptr<EvictionOrder> order = MakeEvictionOrder(policy);
  absl::flat_hash_set<ExpertKey> resident;
  uint64_t hits = 0;
  for (const TraceAccess& access : accesses) {
    const ExpertKey key{.layer = access.layer, .expert = access.expert};
    if (resident.contains(key)) {
      ++hits;
      order->Touch(key, Priority::kDemand);
      continue;
    }
    if (resident.size() == capacity) {
      ExpertKey victim;
      order->ForEachCandidate([&](const ExpertKey& first) {
        victim = first;
        return false;
      });
      order->Erase(victim);
      resident.erase(victim);
    }
    order->Insert(key, Priority::kDemand);
    resident.insert(key);
  }
  return hits;
}

uint64_t MinHits(const std::vector<TraceAccess>& accesses, uint64_t capacity) {
  if (capacity == 0) return 0;
  const size_t n = accesses.size();
  // next_use[i]: index of the next access to the key of access i; n if none.
  std::vector<size_t> next_use(n);
  {
    std::unordered_map<uint64_t, size_t> seen_at;
    for (size_t i = n; i-- > 0;) {
      const uint64_t key = Pack(accesses[i]);
      auto [it, inserted] = seen_at.try_emplace(key, i);
      next_use[i] = inserted ? n : it->second;
      it->second = i;
    }
  }
  std::unordered_map<uint64_t, size_t> resident;  // key -> its next use
  std::set<std::pair<size_t, uint64_t>> by_next_use;
  uint64_t hits = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t key = Pack(accesses[i]);
    auto it = resident.find(key);
    if (it != resident.end()) {
      ++hits;
      by_next_use.erase({it->second, key});
      it->second = next_use[i];
      by_next_use.insert({next_use[i], key});
      continue;
    }
    if (resident.size() == capacity) {
      auto farthest = std::prev(by_next_use.end());
      resident.erase(farthest->second);
      by_next_use.erase(farthest);
    }
    resident.emplace(key, next_use[i]);
    by_next_use.insert({next_use[i], key});
  }
  return hits;
}

}  // namespace

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kLru:
      return "LRU";
    case Policy::kLfru:
      return "LFRU";
    case Policy::kArc:
      return "ARC";
    case Policy::kDuel:
      return "DUEL";
    case Policy::kMin:
      return "MIN";
  }
  return "?";
}

absl::StatusOr<std::vector<TraceLine>> ParseTraceLines(std::string_view text,
                                                       std::string_view name) {
  std::vector<TraceLine> lines;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    const std::string_view line = Strip(text.substr(0, newline));
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.empty() || line.front() == '#') continue;
    if (absl::Status status = ParseLine(line, &lines.emplace_back()); !status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(name), ":", line_number, ": ",
                                                     std::string(status.message()), ": '",
                                                     std::string(line.substr(0, 80)), "'"));
    }
  }
  return lines;
}

std::vector<TraceAccess> Flatten(const std::vector<TraceLine>& lines) {
  std::vector<TraceAccess> accesses;
  for (const TraceLine& line : lines) {
    for (uint32_t expert : line.experts) accesses.push_back({.layer = line.layer, .expert = expert});
  }
  return accesses;
}

absl::StatusOr<std::vector<TraceAccess>> ParseTrace(std::string_view text, std::string_view name) {
  WARP_ASSIGN_OR_RETURN(std::vector<TraceLine> lines, ParseTraceLines(text, name));
  return Flatten(lines);
}

absl::StatusOr<std::vector<TraceLine>> ReadTraceLines(const std::string& path) {
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  return ParseTraceLines(text, path);
}

absl::StatusOr<std::vector<TraceAccess>> ReadTrace(const std::string& path) {
  WARP_ASSIGN_OR_RETURN(std::vector<TraceLine> lines, ReadTraceLines(path));
  return Flatten(lines);
}

uint64_t DistinctRecords(const std::vector<TraceAccess>& accesses) {
  std::unordered_set<uint64_t> keys;
  for (const TraceAccess& access : accesses) keys.insert(Pack(access));
  return keys.size();
}

uint64_t CountHits(Policy policy, const std::vector<TraceAccess>& accesses,
                   uint64_t capacity_records) {
  switch (policy) {
    case Policy::kLru:
      return OrderHits(EvictionPolicy::kLru, accesses, capacity_records);
    case Policy::kLfru:
      return OrderHits(EvictionPolicy::kLfru, accesses, capacity_records);
    case Policy::kArc:
      return OrderHits(EvictionPolicy::kArc, accesses, capacity_records);
    case Policy::kDuel:
      return OrderHits(EvictionPolicy::kDuel, accesses, capacity_records);
    case Policy::kMin:
      return MinHits(accesses, capacity_records);
  }
  return 0;
}

double HitRate(Policy policy, const std::vector<TraceAccess>& accesses, uint64_t capacity_records) {
  if (accesses.empty()) return 0;
  return static_cast<double>(CountHits(policy, accesses, capacity_records)) /
         static_cast<double>(accesses.size());
}

std::vector<TraceLine> ZipfTraceLines(const ZipfTraceOptions& options) {
  WARP_CHECK(options.top_k > 0 && options.top_k <= options.experts);
  WARP_CHECK(options.s >= 0);
  std::mt19937_64 rng(options.seed);
  // permutation[layer][rank]: the expert of popularity rank `rank` (0: most popular).
  std::vector<std::vector<uint32_t>> permutation(options.layers);
  for (std::vector<uint32_t>& experts : permutation) {
    experts.resize(options.experts);
    std::iota(experts.begin(), experts.end(), 0u);
    std::shuffle(experts.begin(), experts.end(), rng);
  }
  std::vector<double> inverse_weight(options.experts);
  for (uint32_t rank = 0; rank < options.experts; ++rank) {
    inverse_weight[rank] = std::pow(static_cast<double>(rank + 1), options.s);
  }
  // Weighted sampling without replacement (Efraimidis-Spirakis): rank r draws
  // the key log(u) / w_r with u uniform in (0, 1]; the top_k largest keys, in
  // descending order, are distributed as top_k successive weighted draws.
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::vector<std::pair<double, uint32_t>> keys(options.experts);
  std::vector<TraceLine> lines;
  lines.reserve(options.tokens * options.layers);
  for (uint64_t token = 0; token < options.tokens; ++token) {
    for (uint32_t layer = 0; layer < options.layers; ++layer) {
      for (uint32_t rank = 0; rank < options.experts; ++rank) {
        keys[rank] = {std::log(1.0 - uniform(rng)) * inverse_weight[rank], rank};
      }
      std::partial_sort(keys.begin(), keys.begin() + options.top_k, keys.end(),
                        [](const auto& a, const auto& b) { return a.first > b.first; });
      TraceLine& line = lines.emplace_back(TraceLine{.layer = layer});
      for (uint32_t i = 0; i < options.top_k; ++i) {
        line.experts.push_back(permutation[layer][keys[i].second]);
      }
    }
  }
  return lines;
}

std::vector<TraceAccess> ZipfTrace(const ZipfTraceOptions& options) {
  return Flatten(ZipfTraceLines(options));
}

uint64_t CountCacheHits(EvictionPolicy policy, const std::vector<TraceLine>& lines,
                        uint64_t capacity_records, const ForesightOptions& options) {
  if (capacity_records == 0) return 0;
  // Experts per layer, for wrong guesses: the largest id the trace names + 1.
  absl::flat_hash_map<uint32_t, uint32_t> experts_of_layer;
  for (const TraceLine& line : lines) {
    for (uint32_t expert : line.experts) {
      uint32_t& count = experts_of_layer[line.layer];
      count = std::max(count, expert + 1);
    }
  }
  // Steps: [begin, end) runs of lines of one layer.
  std::vector<std::pair<size_t, size_t>> steps;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (steps.empty() || lines[steps.back().first].layer != lines[i].layer) {
      steps.push_back({i, i});
    }
    steps.back().second = i + 1;
  }
  RecordCache cache(RecordCache::Options{
      .capacity_bytes = capacity_records, .policy = policy, .foresight = options.foresight});
  std::mt19937_64 rng(options.seed);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  uint64_t hits = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    const uint32_t layer = lines[steps[s].first].layer;
    // The lookahead predicts the next layer of the same tokens, never across tokens.
    if (options.foresight && s + 1 < steps.size() && lines[steps[s + 1].first].layer > layer) {
      for (size_t i = steps[s + 1].first; i < steps[s + 1].second; ++i) {
        const TraceLine& next = lines[i];
        const uint32_t experts = experts_of_layer[next.layer];
        for (uint32_t expert : next.experts) {
          uint32_t guess = expert;
          if (uniform(rng) >= options.recall && experts > 1) {
            guess = std::uniform_int_distribution<uint32_t>(0, experts - 2)(rng);
            if (guess >= expert) ++guess;  // any other expert
          }
          cache.Foresee({.layer = next.layer, .expert = guess});
        }
      }
    }
    std::vector<ExpertKey> pinned;
    for (size_t i = steps[s].first; i < steps[s].second; ++i) {
      for (uint32_t expert : lines[i].experts) {
        const ExpertKey key{.layer = layer, .expert = expert};
        if (cache.Touch(key, Priority::kDemand)) {
          ++hits;
        } else if (!cache.Insert(key, 1, Priority::kDemand).has_value()) {
          continue;  // every record held is this step's: read, not kept
        }
        cache.Pin(key);
        pinned.push_back(key);
      }
    }
    for (const ExpertKey& key : pinned) cache.Unpin(key);
    cache.ForgetForesight(layer);
  }
  return hits;
}

namespace {

// owner[(layer, expert)] under `placement`: expertd shard's own placement
// (expertd/placement.h), by number or by the trace's heat, without replicas.
absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> Owners(
    const std::vector<TraceAccess>& accesses, uint32_t num_shards, Placement placement) {
  std::map<std::pair<uint32_t, uint32_t>, uint64_t> count;  // sorted: usage.warp's order
  for (const TraceAccess& a : accesses) ++count[{a.layer, a.expert}];
  UsageTable usage;
  std::map<uint32_t, uint32_t> experts;  // per layer: the highest expert seen + 1
  for (const auto& [key, n] : count) {
    usage.entries.push_back({key.first, key.second, n});
    experts[key.first] = std::max(experts[key.first], key.second + 1);
  }
  std::vector<BankEntry> banks;
  for (const auto& [layer, num_experts] : experts) {
    banks.push_back(BankEntry{.layer = layer, .num_experts = num_experts});
  }
  const std::vector<ExpertsByLayer> held = expertd::PlaceExperts(
      banks, num_shards, {.usage = placement == Placement::kHeat ? &usage : nullptr});
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> owner;
  for (uint32_t s = 0; s < num_shards; ++s) {
    for (const auto& [layer, list] : held[s]) {
      for (uint32_t expert : list) owner[{layer, expert}] = s;
    }
  }
  return owner;
}

std::vector<std::vector<TraceAccess>> SplitByOwner(const std::vector<TraceAccess>& accesses,
                                                   uint32_t num_shards, Placement placement) {
  const auto owner = Owners(accesses, num_shards, placement);
  std::vector<std::vector<TraceAccess>> parts(num_shards);
  for (const TraceAccess& a : accesses) parts[owner.at({a.layer, a.expert})].push_back(a);
  return parts;
}

}  // namespace

uint64_t CountShardedHits(Policy policy, const std::vector<TraceAccess>& accesses,
                          uint32_t num_shards, uint64_t capacity_each, Placement placement) {
  uint64_t hits = 0;
  for (const auto& part : SplitByOwner(accesses, num_shards, placement)) {
    hits += CountHits(policy, part, capacity_each);
  }
  return hits;
}

double LargestShardShare(const std::vector<TraceAccess>& accesses, uint32_t num_shards,
                         Placement placement) {
  size_t largest = 0;
  for (const auto& part : SplitByOwner(accesses, num_shards, placement)) {
    largest = std::max(largest, part.size());
  }
  return accesses.empty() ? 0 : static_cast<double>(largest) / static_cast<double>(accesses.size());
}

}  // namespace warp::bench
