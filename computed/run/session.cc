#include "computed/run/session.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/logging.h"
#include "common/memory/memory_limits.h"
#include "common/status.h"
#include "computed/run/sources.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

uint64_t Counter(const std::map<std::string, uint64_t>& counters, const std::string& name) {
  auto it = counters.find("expertd.store." + name);
  return it == counters.end() ? 0 : it->second;
}

// The hottest learned experts that fit in the cache, to preload.
std::vector<ExpertKey> WarmSet(const Container& container, uint64_t cache_bytes) {
  const fs::path path = container.dir() / kUsageFile;
  if (!fs::exists(path)) return {};
  absl::StatusOr<UsageTable> usage = ReadUsageFile(path);
  if (!usage.ok() || usage->fingerprint != container.manifest().fingerprint) {
    Logger("computed")
        .warn("{}: ignored ({})", path.string(),
              usage.ok() ? std::string("another model's usage")
                         : std::string(usage.status().message()));
    return {};
  }
  std::vector<ExpertKey> keys;
  uint64_t bytes = 0;
  for (const ExpertUsage& entry : usage->Hottest()) {
    const BankEntry* bank = container.manifest().FindBank(entry.layer);
    if (bank == nullptr || bytes + bank->record_bytes > cache_bytes) continue;
    bytes += bank->record_bytes;
    keys.push_back({entry.layer, entry.expert});
  }
  return keys;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Open(const SessionOptions& options) {
  auto session = std::unique_ptr<Session>(new Session());
  Session& s = *session;
  s.options_ = options;
  WARP_ASSIGN_OR_RETURN(s.container_, Container::Open(options.model));
  const Manifest& manifest = s.container_->manifest();
  WARP_ASSIGN_OR_RETURN(PlanFigures plan, ComputePlan(manifest, options.max_positions));
  WARP_ASSIGN_OR_RETURN(MemoryLimits limits, ReadMemoryLimits());
  WARP_ASSIGN_OR_RETURN(s.budget_, ResolveBudget(plan, options.budget_bytes, limits));
  auto& log = Logger("computed");
  log.info("budget {} ({}): trunk {}, KV {}, expert cache {}", FormatBytes(s.budget_.budget_bytes),
           s.budget_.rule, FormatBytes(plan.trunk_bytes), FormatBytes(plan.kv_bytes),
           FormatBytes(s.budget_.cache_bytes));
  WARP_ASSIGN_OR_RETURN(s.source_,
                        OpenExpertSource(s.container_, {.bank_dirs = options.bank_dirs,
                                                        .stores = options.stores,
                                                        .cache_bytes = s.budget_.cache_bytes,
                                                        .io_threads = options.io_threads}));
  const std::vector<ExpertKey> warm = WarmSet(*s.container_, s.budget_.cache_bytes);
  if (!warm.empty()) {
    log.info("preloading {} learned hot experts", warm.size());
    s.source_->Prefetch(warm, Priority::kCertain);
  }
  const uint32_t threads =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  s.pool_ = std::make_unique<ThreadPool>(threads, options.cpus);
  Transformer::Options engine{.max_positions = options.max_positions,
                              .experts_per_token = options.experts_per_token,
                              .prefetch = options.prefetch,
                              .certain = options.certain,
                              .lookahead = options.lookahead};
  if (options.learn || !options.trace_path.empty()) {
    engine.on_route = [&s](uint32_t position, uint32_t layer,
                           const std::vector<uint32_t>& experts) {
      s.OnRoute(position, layer, experts);
    };
  }
  WARP_ASSIGN_OR_RETURN(s.transformer_,
                        Transformer::Create(s.container_, *s.source_, *s.pool_, engine));
  if (options.experts_per_token != 0) {
    log.warn("--experts-per-token {} instead of the model's {}: a quality trade",
             options.experts_per_token, s.transformer_->config().experts_per_token);
  }
  if (!options.trace_path.empty()) {
    s.trace_.open(options.trace_path);
    if (!s.trace_) return absl::PermissionDeniedError(options.trace_path + ": cannot write");
    s.trace_ << "# position layer experts (routing rank order)\n";
  }
  s.usage_.fingerprint = manifest.fingerprint;
  s.counters_at_start_ = s.source_->Counters();
  s.start_ = std::chrono::steady_clock::now();
  return session;
}

Session::~Session() = default;

void Session::OnRoute(uint32_t position, uint32_t layer, const std::vector<uint32_t>& experts) {
  if (trace_.is_open()) {
    trace_ << position << " " << layer << " " << absl::StrJoin(experts, ",") << "\n";
  }
  if (!options_.learn) return;
  UsageTable one{.fingerprint = usage_.fingerprint};
  for (uint32_t expert : experts) one.entries.push_back({layer, expert, 1});
  std::sort(one.entries.begin(), one.entries.end(),
            [](const ExpertUsage& a, const ExpertUsage& b) { return a.expert < b.expert; });
  usage_.Merge(one);
}

absl::StatusOr<std::vector<float>> Session::Prefill(std::span<const int32_t> tokens) {
  std::vector<float> logits;
  const size_t chunk = options_.prefill_chunk ? options_.prefill_chunk : tokens.size();
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    const size_t n = std::min(chunk, tokens.size() - begin);
    WARP_ASSIGN_OR_RETURN(std::vector<float> part, transformer_->Forward(tokens.subspan(begin, n)));
    logits.insert(logits.end(), part.begin(), part.end());
  }
  return logits;
}

absl::StatusOr<std::vector<float>> Session::PrefillLast(std::span<const int32_t> tokens) {
  std::vector<float> logits;
  const size_t chunk = options_.prefill_chunk ? options_.prefill_chunk : tokens.size();
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    const size_t n = std::min(chunk, tokens.size() - begin);
    WARP_ASSIGN_OR_RETURN(logits,
                          transformer_->Forward(tokens.subspan(begin, n), /*last_only=*/true));
  }
  return logits;
}

absl::StatusOr<std::vector<float>> Session::Step(int32_t token) {
  return transformer_->Forward({&token, 1});
}

absl::Status Session::Finish() {
  if (trace_.is_open()) trace_.close();
  if (!options_.learn) return absl::OkStatus();
  usage_.tokens = transformer_->stats().tokens;
  const fs::path path = container_->dir() / kUsageFile;
  UsageTable merged = usage_;
  if (fs::exists(path)) {
    absl::StatusOr<UsageTable> old = ReadUsageFile(path);
    if (old.ok() && old->fingerprint == usage_.fingerprint) {
      merged = *old;
      merged.Merge(usage_);
    }
  }
  WARP_RETURN_IF_ERROR(WriteUsageFile(path, merged));
  Logger("computed")
      .info("learned {} experts over {} tokens into {}", merged.entries.size(), merged.tokens,
            path.string());
  return absl::OkStatus();
}

std::string Session::StatsLine() const {
  const ForwardStats& stats = transformer_->stats();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::map<std::string, uint64_t> now = source_->Counters();
  auto delta = [&](const std::string& name) {
    return Counter(now, name) - Counter(counters_at_start_, name);
  };
  const uint64_t hits = delta("cache_hits");
  const uint64_t misses = delta("cache_misses");
  const uint64_t read =
      delta("read_bytes_demand") + delta("read_bytes_certain") + delta("read_bytes_lookahead");
  std::string line =
      absl::StrFormat("[%d tokens %.1f tok/s | experts %d hit / %d miss %.0f%% | read %s",
                      stats.tokens, seconds > 0 ? stats.tokens / seconds : 0.0, hits, misses,
                      hits + misses ? 100.0 * hits / (hits + misses) : 0.0,
                      FormatBytes(read ? read : stats.expert_read_bytes));
  const LookaheadStats& lookahead = transformer_->lookahead_stats();
  if (lookahead.routed > 0) {
    absl::StrAppendFormat(
        &line, " | lookahead recall %.0f%% | wasted %.1f B/B",
        100.0 * lookahead.hits / lookahead.routed,
        stats.expert_read_bytes
            ? static_cast<double>(lookahead.wasted_bytes) / stats.expert_read_bytes
            : 0.0);
  }
  if (stats.certain_reads > 0) {
    absl::StrAppendFormat(&line, " | certain %d (%s)", stats.certain_reads,
                          FormatBytes(delta("read_bytes_certain")));
  }
  if (stats.expert_read_bytes > 0 && stats.token_by_token_bytes > stats.expert_read_bytes) {
    absl::StrAppendFormat(
        &line, " | prefill dedup %.1fx",
        static_cast<double>(stats.token_by_token_bytes) / stats.expert_read_bytes);
  }
  return line + "]";
}

std::string Session::StageReport() const {
  const ForwardStats& stats = transformer_->stats();
  const double total =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double compute =
      stats.seconds_attention + stats.seconds_dense + stats.seconds_route + stats.seconds_expert;
  std::string report;
  auto row = [&](const char* name, double seconds) {
    absl::StrAppendFormat(&report, "  %-13s %8.3f s %5.1f%%\n", name, seconds,
                          total > 0 ? 100 * seconds / total : 0.0);
  };
  row("attention", stats.seconds_attention);
  row("dense+shared", stats.seconds_dense);
  row("route", stats.seconds_route);
  row("fetch_wait", stats.seconds_fetch_wait);
  row("expert", stats.seconds_expert);
  absl::StrAppendFormat(
      &report, "  %-13s %8.3f s: compute %.3f s, waiting for reads %.1f%%, %s read a token\n",
      "total", total, compute, total > 0 ? 100 * stats.seconds_fetch_wait / total : 0.0,
      FormatBytes(stats.tokens ? stats.expert_read_bytes / stats.tokens : 0));
  // Overlap efficiency: 1.0 when the run takes only as long as its busier
  // side, the disk or the CPU. Only an embedded store reports its disk time.
  const std::map<std::string, uint64_t> now = source_->Counters();
  if (now.contains("expertd.store.disk_busy_us") && total > 0) {
    const double io =
        (Counter(now, "disk_busy_us") - Counter(counters_at_start_, "disk_busy_us")) / 1e6;
    absl::StrAppendFormat(&report, "  %-13s max(I/O %.3f s, compute %.3f s) / %.3f s = %.2f\n",
                          "overlap", io, compute, total, std::max(io, compute) / total);
  }
  return report;
}

}  // namespace warp::computed
