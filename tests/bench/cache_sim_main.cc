// Cache policies on recorded routing traces: the hit rate of LRU, LFRU (the
// runtime's default), ARC, DUEL and Belady's offline MIN at several budgets, in
// records, with DUEL against the better of LRU and LFRU and against MIN.
//
//   cache_sim TRACE [--budgets 16,64,256 | --fractions 0.05,0.1,0.25,0.5]
//   cache_sim --zipf N_EXPERTS,LAYERS,TOPK,TOKENS,S [--seed N] [--budgets ... | --fractions ...]
//
//   ... [--foresight 0.5,0.8,1] [--shards 2,4]
//
// TRACE is written by `computed run ... --trace FILE`. --zipf generates a
// synthetic trace instead (Zipf(S) expert popularity per layer, see
// cache_sim.h). --fractions are of the trace's distinct records (default
// 0.05,0.1,0.25,0.5). --foresight adds a table: the runtime's RecordCache
// (LFRU and DUEL) with evictions sparing the lookahead's predictions of the
// next layer, right at each RECALL, against the same cache without them.
// --shards adds another: N daemons, each caching B records of the experts it
// owns (e % N, and hot experts spread by heat), against one cache of N x B.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tests/bench/cache_sim.h"

namespace {

using warp::bench::Policy;
using warp::bench::TraceAccess;

constexpr char kUsage[] =
    "usage: cache_sim TRACE [--budgets 16,64,256 | --fractions 0.05,0.1,0.25,0.5]\n"
    "       cache_sim --zipf N_EXPERTS,LAYERS,TOPK,TOKENS,S [--seed N] [--budgets ... | "
    "--fractions ...]\n"
    "       ... [--foresight RECALL,...] [--shards N,...]\n";

int Usage(const std::string& error) {
  std::fprintf(stderr, "cache_sim: %s\n%s", error.c_str(), kUsage);
  return 2;
}

template <typename T, typename Parse>
bool ParseList(const std::string& text, Parse parse, std::vector<T>* values) {
  values->clear();
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    T value{};
    if (!parse(item, &value)) return false;
    values->push_back(value);
  }
  return !values->empty();
}

bool ParseU64(absl::string_view text, uint64_t* value) { return absl::SimpleAtoi(text, value); }
bool ParseDouble(absl::string_view text, double* value) { return absl::SimpleAtod(text, value); }

void PrintTable(const std::vector<TraceAccess>& accesses, const std::vector<uint64_t>& budgets) {
  const uint64_t distinct = warp::bench::DistinctRecords(accesses);
  std::printf("%zu accesses, %llu distinct records\n", accesses.size(),
              static_cast<unsigned long long>(distinct));
  std::printf("%8s %9s %8s %8s %8s %8s %8s %10s %9s\n", "budget", "fraction", "LRU", "LFRU",
              "ARC", "DUEL", "MIN", "DUEL/best", "DUEL/MIN");
  for (uint64_t budget : budgets) {
    const double lru = warp::bench::HitRate(Policy::kLru, accesses, budget);
    const double lfru = warp::bench::HitRate(Policy::kLfru, accesses, budget);
    const double arc = warp::bench::HitRate(Policy::kArc, accesses, budget);
    const double duel = warp::bench::HitRate(Policy::kDuel, accesses, budget);
    const double min = warp::bench::HitRate(Policy::kMin, accesses, budget);
    const double fraction =
        distinct == 0 ? 0 : static_cast<double>(budget) / static_cast<double>(distinct);
    const double best = std::max(lru, lfru);
    char to_best[32] = "-";
    if (best > 0) std::snprintf(to_best, sizeof(to_best), "%.3f", duel / best);
    char to_min[32] = "-";
    if (min > 0) std::snprintf(to_min, sizeof(to_min), "%.3f", duel / min);
    std::printf("%8llu %9.3f %7.2f%% %7.2f%% %7.2f%% %7.2f%% %7.2f%% %10s %9s\n",
                static_cast<unsigned long long>(budget), fraction, 100 * lru, 100 * lfru, 100 * arc,
                100 * duel, 100 * min, to_best, to_min);
  }
}

void PrintForesight(const std::vector<warp::bench::TraceLine>& lines,
                    const std::vector<TraceAccess>& accesses, const std::vector<uint64_t>& budgets,
                    const std::vector<double>& recalls) {
  std::printf("\nforesight (RecordCache; hit rate without, then sparing predictions right at "
              "each recall)\n%8s %6s %8s", "budget", "policy", "none");
  for (double recall : recalls) std::printf(" %7s%-3.2g", "r=", recall);
  std::printf(" %8s\n", "MIN");
  for (uint64_t budget : budgets) {
    const double min = warp::bench::HitRate(Policy::kMin, accesses, budget);
    for (warp::EvictionPolicy policy : {warp::EvictionPolicy::kLfru, warp::EvictionPolicy::kDuel}) {
      auto rate = [&](const warp::bench::ForesightOptions& options) {
        return 100.0 * static_cast<double>(
                           warp::bench::CountCacheHits(policy, lines, budget, options)) /
               static_cast<double>(std::max<size_t>(accesses.size(), 1));
      };
      std::printf("%8llu %6s %7.2f%%", static_cast<unsigned long long>(budget),
                  warp::EvictionPolicyName(policy), rate({}));
      for (double recall : recalls) {
        std::printf(" %9.2f%%", rate({.foresight = true, .recall = recall}));
      }
      std::printf(" %7.2f%%\n", 100 * min);
    }
  }
}

void PrintShards(const std::vector<TraceAccess>& accesses, const std::vector<uint64_t>& budgets,
                 const std::vector<uint64_t>& shards) {
  using warp::bench::Placement;
  std::printf("\nshards: N caches of B records (each the records its shard owns) against one of "
              "N x B, DUEL and LRU\n%6s %8s %6s %9s %9s %9s %9s %9s %14s\n", "shards", "B",
              "policy", "one N*B", "e % N", "by heat", "e%N-one", "heat-one",
              "largest share");
  for (const uint64_t n : shards) {
    const uint32_t num_shards = static_cast<uint32_t>(n);
    for (uint64_t budget : budgets) {
      for (Policy policy : {Policy::kDuel, Policy::kLru}) {
        const double total = static_cast<double>(std::max<size_t>(accesses.size(), 1));
        const double one = 100 * warp::bench::HitRate(policy, accesses, n * budget);
        const double modulo = 100 * static_cast<double>(warp::bench::CountShardedHits(
                                        policy, accesses, num_shards, budget, Placement::kModulo)) /
                              total;
        const double heat = 100 * static_cast<double>(warp::bench::CountShardedHits(
                                      policy, accesses, num_shards, budget, Placement::kHeat)) /
                            total;
        std::printf("%6llu %8llu %6s %8.2f%% %8.2f%% %8.2f%% %+8.2f %+8.2f %6.3f / %5.3f\n",
                    static_cast<unsigned long long>(n), static_cast<unsigned long long>(budget),
                    warp::bench::PolicyName(policy), one, modulo, heat, modulo - one, heat - one,
                    warp::bench::LargestShardShare(accesses, num_shards, Placement::kModulo),
                    warp::bench::LargestShardShare(accesses, num_shards, Placement::kHeat));
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace_path;
  std::string zipf;
  std::vector<uint64_t> budgets;
  std::vector<double> fractions = {0.05, 0.1, 0.25, 0.5};
  std::vector<double> recalls;
  std::vector<uint64_t> shards;
  uint64_t seed = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--budgets" && has_value) {
      if (!ParseList<uint64_t>(argv[++i], ParseU64, &budgets)) {
        return Usage("bad --budgets '" + std::string(argv[i]) + "'");
      }
    } else if (arg == "--fractions" && has_value) {
      if (!ParseList<double>(argv[++i], ParseDouble, &fractions) ||
          std::any_of(fractions.begin(), fractions.end(), [](double f) { return !(f > 0); })) {
        return Usage("bad --fractions '" + std::string(argv[i]) + "'");
      }
      budgets.clear();
    } else if (arg == "--foresight" && has_value) {
      if (!ParseList<double>(argv[++i], ParseDouble, &recalls) ||
          std::any_of(recalls.begin(), recalls.end(),
                      [](double r) { return !(r >= 0 && r <= 1); })) {
        return Usage("bad --foresight '" + std::string(argv[i]) + "' (recalls in [0, 1])");
      }
    } else if (arg == "--shards" && has_value) {
      if (!ParseList<uint64_t>(argv[++i], ParseU64, &shards) ||
          std::any_of(shards.begin(), shards.end(), [](uint64_t n) { return n < 2 || n > 64; })) {
        return Usage("bad --shards '" + std::string(argv[i]) + "' (2 to 64 each)");
      }
    } else if (arg == "--zipf" && has_value) {
      zipf = argv[++i];
    } else if (arg == "--seed" && has_value) {
      if (!absl::SimpleAtoi(argv[++i], &seed)) {
        return Usage("bad --seed '" + std::string(argv[i]) + "'");
      }
    } else if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (!arg.empty() && arg[0] != '-' && trace_path.empty()) {
      trace_path = arg;
    } else {
      return Usage("unexpected argument '" + arg + "'");
    }
  }
  if (trace_path.empty() == zipf.empty()) return Usage("give exactly one of TRACE or --zipf");

  std::vector<warp::bench::TraceLine> lines;
  if (!zipf.empty()) {
    std::vector<absl::string_view> parts = absl::StrSplit(zipf, ',');
    warp::bench::ZipfTraceOptions options{.seed = seed};
    if (parts.size() != 5 || !absl::SimpleAtoi(parts[0], &options.experts) ||
        !absl::SimpleAtoi(parts[1], &options.layers) ||
        !absl::SimpleAtoi(parts[2], &options.top_k) ||
        !absl::SimpleAtoi(parts[3], &options.tokens) || !absl::SimpleAtod(parts[4], &options.s) ||
        options.top_k == 0 || options.top_k > options.experts || !(options.s >= 0)) {
      return Usage("bad --zipf '" + zipf + "' (need 0 < TOPK <= N_EXPERTS, S >= 0)");
    }
    std::printf("zipf trace: %u experts, %u layers, top-%u, %llu tokens, s=%g, seed %llu\n",
                options.experts, options.layers, options.top_k,
                static_cast<unsigned long long>(options.tokens), options.s,
                static_cast<unsigned long long>(seed));
    lines = warp::bench::ZipfTraceLines(options);
  } else {
    absl::StatusOr<std::vector<warp::bench::TraceLine>> trace =
        warp::bench::ReadTraceLines(trace_path);
    if (!trace.ok()) {
      std::fprintf(stderr, "cache_sim: %s\n", std::string(trace.status().message()).c_str());
      return 1;
    }
    std::printf("trace %s\n", trace_path.c_str());
    lines = *std::move(trace);
  }
  const std::vector<TraceAccess> accesses = warp::bench::Flatten(lines);

  if (budgets.empty()) {
    const uint64_t distinct = warp::bench::DistinctRecords(accesses);
    for (double fraction : fractions) {
      budgets.push_back(std::max<uint64_t>(
          1, static_cast<uint64_t>(std::llround(fraction * static_cast<double>(distinct)))));
    }
  }
  PrintTable(accesses, budgets);
  if (!recalls.empty()) PrintForesight(lines, accesses, budgets, recalls);
  if (!shards.empty()) PrintShards(accesses, budgets, shards);
  return 0;
}
