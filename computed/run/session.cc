#include "computed/run/session.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/kernels/q8_activations.h"
#include "common/logging.h"
#include "common/memory/memory_governor.h"
#include "common/memory/memory_limits.h"
#include "common/status.h"
#include "computed/run/preload.h"
#include "computed/run/sources.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

using Counters = std::map<std::string, uint64_t>;

uint64_t Counter(const Counters& counters, const std::string& name,
                 const std::string& prefix = "expertd.store.") {
  auto it = counters.find(prefix + name);
  return it == counters.end() ? 0 : it->second;
}

// `into` += after - before, counter by counter (gauges like cache_used_bytes
// come out as noise; only the monotonic counters are read).
void AddDelta(Counters& into, const Counters& after, const Counters& before) {
  for (const auto& [name, value] : after) {
    auto it = before.find(name);
    into[name] += value - (it == before.end() ? 0 : it->second);
  }
}

// Disk bytes read for any request, if the source counts them (the embedded
// store, gRPC daemons' Stats); nullopt if it does not (the fast path).
std::optional<uint64_t> ReadBytes(const Counters& counters) {
  if (!counters.contains("expertd.store.read_bytes_demand")) return std::nullopt;
  return Counter(counters, "read_bytes_demand") + Counter(counters, "read_bytes_certain") +
         Counter(counters, "read_bytes_lookahead");
}

// The learned experts of usage.warp, hottest first; none without the file.
std::vector<ExpertKey> LearnedHottest(const Container& container) {
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
  for (const ExpertUsage& entry : usage->Hottest()) keys.push_back({entry.layer, entry.expert});
  return keys;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> Session::Open(const SessionOptions& options) {
  auto session = std::unique_ptr<Session>(new Session());
  Session& s = *session;
  s.options_ = options;
  WARP_ASSIGN_OR_RETURN(s.container_, Container::Open(options.model));
  WARP_ASSIGN_OR_RETURN(const PlanFigures plan, s.Plan());
  WARP_ASSIGN_OR_RETURN(const MemoryLimits limits, ReadMemoryLimits());
  WARP_RETURN_IF_ERROR(s.Budget(plan, limits));
  // Known before the source opens: a warm set to preload turns paced growth off.
  const std::vector<ExpertKey> hottest = LearnedHottest(*s.container_);
  WARP_RETURN_IF_ERROR(s.OpenSource(plan, /*warm_set=*/options.run.preload || !hottest.empty()));
  s.StartGovernor(plan, limits);
  WARP_RETURN_IF_ERROR(s.WarmCache(hottest));
  WARP_RETURN_IF_ERROR(s.CreateEngine(plan));
  WARP_RETURN_IF_ERROR(s.OpenOutputs());
  return session;
}

absl::StatusOr<PlanFigures> Session::Plan() const {
  const Transformer::Options& engine = options_.engine;
  const std::string manifest_path = container_->ManifestPath().string();
  WARP_ASSIGN_OR_RETURN(
      PlanFigures plan,
      ComputePlan(container_->manifest(),
                  {.context_tokens = engine.max_positions,
                   .source = manifest_path,
                   .sequences = engine.sequences,
                   .fold_early_routes = engine.early_routes == EarlyRoutes::kFolded && engine.prefetch,
                   .engram_cache_bytes = options_.source.engram_cache_bytes}));
  if (plan.max_position_embeddings > 0 && engine.max_positions > plan.max_position_embeddings) {
    Logger("computed")
        .warn(
            "a context of {} positions is past the model's max_position_embeddings {}: "
            "prompts must stay within it; tokens generated past it are beyond its training",
            engine.max_positions, plan.max_position_embeddings);
  }
  return plan;
}

absl::Status Session::Budget(const PlanFigures& plan, const MemoryLimits& limits) {
  WARP_ASSIGN_OR_RETURN(budget_, ResolveBudget(plan, options_.run.budget_bytes, limits,
                                               options_.source.store.io_threads));
  Logger("computed")
      .info("budget {} ({}): trunk {}{}, KV {}, expert cache {}", FormatBytes(budget_.budget_bytes),
            budget_.rule, FormatBytes(plan.trunk_bytes),
            plan.fold_bytes ? ", early routes " + FormatBytes(plan.fold_bytes) : "",
            FormatBytes(plan.kv_bytes), FormatBytes(budget_.cache_bytes));
  return absl::OkStatus();
}

absl::Status Session::OpenSource(const PlanFigures& plan, bool warm_set) {
  SourceOptions source = options_.source;
  source.store.cache_bytes = budget_.cache_bytes;
  // A warm set (--preload, or a learned one) fills the cache at once: nothing to pace.
  if (warm_set) source.store.pace_growth_below_bytes_per_second = 0;
  WARP_ASSIGN_OR_RETURN(OpenedSource opened, OpenExpertSource(container_, source));
  WARP_ASSIGN_OR_RETURN(engram_, OpenEngramStore(container_, source, opened));
  source_ = std::move(opened.source);
  computer_ = opened.computer;
  if (opened.local_daemons.empty()) return absl::OkStatus();
  if (options_.run.budget_bytes || !source.bank_dirs.empty()) {
    return CheckLocalDaemonCaches(opened.local_daemons,
                                  budget_.cache_bytes - opened.embedded_cache_bytes);
  }
  // The machine's default would count the daemons' caches again: the memory
  // they hold is already gone from MemAvailable.
  budget_ = BudgetOverLocalDaemons(plan, opened.local_daemons);
  Logger("computed").info("budget {} ({})", FormatBytes(budget_.budget_bytes), budget_.rule);
  return absl::OkStatus();
}

// Inside a memory cgroup, a governor shrinks the cache of this process
// before the kernel reclaims or kills, and grows it back to the budget.
void Session::StartGovernor(const PlanFigures& plan, const MemoryLimits& limits) {
  if (!limits.cgroup_limit_bytes || !limits.assumed.empty() || plan.num_moe_layers == 0 ||
      !source_->ResizeCache(budget_.cache_bytes).has_value()) {
    return;
  }
  ExpertSource* source = source_.get();
  governor_ = std::make_unique<MemoryGovernor>(
      MemoryGovernor::Options{.limit_file = limits.cgroup_source,
                              .margin_bytes = kCgroupMarginBytes,
                              .max_capacity_bytes = budget_.cache_bytes,
                              .min_capacity_bytes = plan.floor_cache_bytes},
      budget_.cache_bytes,
      [source](uint64_t bytes) { return source->ResizeCache(bytes).value_or(0); });
}

// --preload reads the whole cache's worth before the first token; otherwise
// the learned hot experts that fit are hinted, read while the trunk computes.
absl::Status Session::WarmCache(std::span<const ExpertKey> hottest) {
  const Manifest& manifest = container_->manifest();
  auto& log = Logger("computed");
  if (options_.run.preload) {
    const std::vector<ExpertKey> keys = PreloadSet(manifest, budget_.cache_bytes, hottest);
    WARP_ASSIGN_OR_RETURN(PreloadFigures preloaded,
                          Preload(*source_, keys, 2 * size_t{options_.source.store.io_threads}));
    uint64_t records = 0;
    for (const BankEntry& bank : manifest.banks) records += bank.num_experts;
    log.info("preloaded {} of {} expert records ({}) in {:.1f} s", preloaded.records, records,
             FormatBytes(preloaded.bytes), preloaded.seconds);
  } else if (const std::vector<ExpertKey> warm = FitInCache(manifest, budget_.cache_bytes, hottest);
             !warm.empty()) {
    log.info("preloading {} learned hot experts", warm.size());
    source_->Prefetch(warm, Priority::kCertain);
  }
  return absl::OkStatus();
}

absl::Status Session::CreateEngine(const PlanFigures& plan) {
  const SessionOptions& options = options_;
  auto& log = Logger("computed");
  const uint32_t threads = options.compute.threads
                               ? options.compute.threads
                               : std::max(1u, std::thread::hardware_concurrency());
  pool_ = std::make_unique<ThreadPool>(threads, options.compute.cpus);
  compute_ = std::make_unique<ComputeContext>(
      *pool_, Arithmetic{.q8_activations = options.compute.q8_activations});
  if (options.compute.q8_activations) {
    log.debug("activations: 8-bit for 4-bit weights ({} kernel)", kernels::Q8KernelName());
  }
  Transformer::Options engine = options.engine;
  engine.engram_store = engram_.get();
  engine.expert_computer = computer_;
  // The cache's slots: a larger union is read in waves that fit.
  engine.cache_records = plan.max_record_bytes ? budget_.cache_bytes / plan.max_record_bytes : 0;
  if (options.run.learn || !options.run.trace_path.empty()) {
    engine.on_route = [this](uint32_t position, uint32_t layer,
                             const std::vector<uint32_t>& experts) {
      OnRoute(position, layer, experts);
    };
  }
  WARP_ASSIGN_OR_RETURN(transformer_,
                        Transformer::Create(container_, *source_, *compute_, engine));
  if (engine.experts_per_token != 0) {
    log.warn("--experts-per-token {} instead of the model's {}: a quality trade",
             engine.experts_per_token, transformer_->config().experts_per_token);
  }
  return absl::OkStatus();
}

absl::Status Session::OpenOutputs() {
  const std::string& trace_path = options_.run.trace_path;
  if (!trace_path.empty()) {
    trace_.open(trace_path);
    if (!trace_) return absl::PermissionDeniedError(trace_path + ": cannot write");
    trace_ << "# position layer experts (routing rank order)\n";
  }
  usage_.fingerprint = container_->manifest().fingerprint;
  counters_at_phase_start_ = AllCounters();
  return absl::OkStatus();
}

Session::~Session() = default;

void Session::OnRoute(uint32_t position, uint32_t layer, const std::vector<uint32_t>& experts) {
  if (trace_.is_open()) {
    trace_ << position << " " << layer << " " << absl::StrJoin(experts, ",") << "\n";
  }
  if (!options_.run.learn) return;
  UsageTable one{.fingerprint = usage_.fingerprint};
  for (uint32_t expert : experts) one.entries.push_back({layer, expert, 1});
  std::sort(one.entries.begin(), one.entries.end(),
            [](const ExpertUsage& a, const ExpertUsage& b) { return a.expert < b.expert; });
  usage_.Merge(one);
}

std::map<std::string, uint64_t> Session::AllCounters() const {
  std::map<std::string, uint64_t> counters = source_->Counters();
  if (engram_) counters.merge(engram_->CounterMap());
  return counters;
}

absl::Status Session::InPhase(Phase phase, const std::function<absl::Status()>& forward) {
  if (phase != phase_) {
    const auto now = AllCounters();
    AddDelta(phases_[phase_].source_counters, now, counters_at_phase_start_);
    counters_at_phase_start_ = now;
    phase_ = phase;
  }
  const ForwardStats before = transformer_->stats();
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = forward();
  PhaseFigures& figures = phases_[phase];
  figures.seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  figures.forward += ForwardStats::Delta(transformer_->stats(), before);
  return status;
}

std::array<Session::PhaseFigures, 2> Session::Phases() const {
  std::array<PhaseFigures, 2> phases = phases_;
  AddDelta(phases[phase_].source_counters, AllCounters(), counters_at_phase_start_);
  return phases;
}

absl::StatusOr<std::vector<float>> Session::Prefill(std::span<const int32_t> tokens,
                                                    uint32_t sequence) {
  return PrefillChunks(tokens, Transformer::Logits::kEvery, sequence);
}

absl::StatusOr<std::vector<float>> Session::PrefillLast(std::span<const int32_t> tokens,
                                                        uint32_t sequence) {
  return PrefillChunks(tokens, Transformer::Logits::kLast, sequence);
}

absl::Status Session::Feed(std::span<const int32_t> tokens, uint32_t sequence) {
  return PrefillChunks(tokens, Transformer::Logits::kNone, sequence).status();
}

absl::StatusOr<std::vector<float>> Session::PrefillChunks(std::span<const int32_t> tokens,
                                                          Transformer::Logits logits_of,
                                                          uint32_t sequence) {
  const uint64_t end = uint64_t{position(sequence)} + tokens.size();
  if (trained_positions() > 0 && end > trained_positions()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the prompt reaches position ", end, ", past the model's ", trained_positions(), " (",
        container_->ManifestPath().string(), ": config.max_position_embeddings)"));
  }
  std::vector<float> logits;
  WARP_RETURN_IF_ERROR(InPhase(kPrefill, [&]() -> absl::Status {
    const size_t chunk = options_.run.prefill_chunk ? options_.run.prefill_chunk : tokens.size();
    const uint32_t start = position(sequence);
    for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
      const size_t n = std::min(chunk, tokens.size() - begin);
      if (begin + n < tokens.size()) {  // the next chunk's engram rows, while this one runs
        transformer_->PrefetchEngram(
            tokens.subspan(begin + n, std::min(chunk, tokens.size() - begin - n)),
            start + static_cast<uint32_t>(begin + n), sequence);
      }
      // The last position's logits are the last chunk's: the chunks before
      // it run no head.
      const bool last_chunk = begin + n == tokens.size();
      const Transformer::Logits rows = logits_of == Transformer::Logits::kLast && !last_chunk
                                           ? Transformer::Logits::kNone
                                           : logits_of;
      WARP_ASSIGN_OR_RETURN(std::vector<float> part,
                            transformer_->Forward(tokens.subspan(begin, n), rows, sequence));
      logits.insert(logits.end(), part.begin(), part.end());
    }
    return absl::OkStatus();
  }));
  return logits;
}

absl::StatusOr<std::vector<float>> Session::Step(int32_t token, uint32_t sequence) {
  std::vector<float> logits;
  WARP_RETURN_IF_ERROR(InPhase(kDecode, [&]() -> absl::Status {
    WARP_ASSIGN_OR_RETURN(logits,
                          transformer_->Forward({&token, 1}, Transformer::Logits::kLast, sequence));
    return absl::OkStatus();
  }));
  return logits;
}

absl::StatusOr<std::vector<std::vector<float>>> Session::ForwardBatch(
    std::span<const Transformer::SequenceChunk> chunks) {
  const bool decode = std::all_of(chunks.begin(), chunks.end(),
                                  [](const auto& chunk) { return chunk.tokens.size() == 1; });
  std::vector<std::vector<float>> logits;
  WARP_RETURN_IF_ERROR(InPhase(decode ? kDecode : kPrefill, [&]() -> absl::Status {
    WARP_ASSIGN_OR_RETURN(logits, transformer_->ForwardBatch(chunks));
    return absl::OkStatus();
  }));
  return logits;
}

absl::Status Session::Finish() {
  if (trace_.is_open()) trace_.close();
  if (!options_.run.learn) return absl::OkStatus();
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
  const std::array<PhaseFigures, 2> phases = Phases();
  std::vector<std::string> parts;
  ForwardStats all;
  uint64_t lookahead_read = 0, certain_read = 0;
  // Guesses never read: their layer passed first, or the cache had no slot to keep them.
  uint64_t lookahead_dropped = 0, lookahead_unkept = 0;
  bool counted_reads = true;
  for (Phase phase : {kPrefill, kDecode}) {
    const PhaseFigures& f = phases[phase];
    all += f.forward;
    if (f.forward.tokens == 0) continue;
    const ForwardStats& st = f.forward;
    const uint64_t hits = st.CountOf(Served::kCache), misses = st.CountOf(Served::kDisk);
    std::string part =
        absl::StrFormat("%s %d tokens %.1f tok/s: experts %d hit / %d miss %.0f%%",
                        phase == kPrefill ? "prefill" : "decode", st.tokens,
                        f.seconds > 0 ? st.tokens / f.seconds : 0.0, hits, misses,
                        st.demand_records() ? 100.0 * hits / st.demand_records() : 0.0);
    if (uint64_t n = st.CountOf(Served::kLookahead)) {
      absl::StrAppendFormat(&part, ", %d lookahead hits", n);
    }
    if (uint64_t n = st.CountOf(Served::kCertain)) {
      absl::StrAppendFormat(&part, ", %d certain hits", n);
    }
    if (uint64_t n = st.CountOf(Served::kUnknown)) {
      absl::StrAppendFormat(&part, ", %d unreported", n);
    }
    // Bytes the disk read in this phase (predictions included); a source that
    // does not count them (the fast path) shows what the misses read.
    const std::optional<uint64_t> read = ReadBytes(f.source_counters);
    counted_reads = counted_reads && read.has_value();
    const uint64_t bytes = read.value_or(st.BytesOf(Served::kDisk));
    absl::StrAppend(&part, read ? ", read " : ", misses read ", FormatBytes(bytes));
    if (phase == kDecode) absl::StrAppend(&part, ", ", FormatBytes(bytes / st.tokens), " a token");
    lookahead_read += Counter(f.source_counters, "read_bytes_lookahead");
    certain_read += Counter(f.source_counters, "read_bytes_certain");
    lookahead_dropped += Counter(f.source_counters, "lookahead_cancelled");
    lookahead_unkept += Counter(f.source_counters, "lookahead_unkept");
    parts.push_back(std::move(part));
  }
  if (parts.empty()) parts.push_back("0 tokens");
  const LookaheadStats& lookahead = transformer_->lookahead_stats();
  if (lookahead.routed > 0) {
    std::string part =
        absl::StrFormat("lookahead recall %.0f%%", 100.0 * lookahead.hits / lookahead.routed);
    if (counted_reads) {
      // What the predictions cost: every byte they read, and those no demand used.
      const uint64_t used = all.BytesOf(Served::kLookahead);
      absl::StrAppend(&part, ", read ", FormatBytes(lookahead_read), ", ",
                      FormatBytes(lookahead_read > used ? lookahead_read - used : 0), " unused");
    }
    if (lookahead_dropped + lookahead_unkept > 0) {
      absl::StrAppendFormat(&part, ", not read: %d passed, %d no slot", lookahead_dropped,
                            lookahead_unkept);
    }
    // Each depth's own figures: recall, and the records it hinted that its layer did not use.
    for (uint32_t depth = 1; depth <= transformer_->lookahead_depth() &&
                             transformer_->lookahead_depth() > 1;
         ++depth) {
      const LookaheadStats& at = transformer_->lookahead_stats(depth);
      absl::StrAppend(&part, "; depth ", depth, ": recall ",
                      at.routed ? absl::StrFormat("%.0f%%", 100.0 * at.hits / at.routed) : "-",
                      ", ", FormatBytes(at.wasted_bytes), " hinted unused");
    }
    parts.push_back(std::move(part));
  }
  if (all.certain_reads > 0) {
    parts.push_back(
        absl::StrFormat("certain %d (%s)", all.certain_reads, FormatBytes(certain_read)));
  }
  if (all.early_routed > 0) {  // their reads are the "certain hits" above
    parts.push_back(
        absl::StrFormat("routed early %d, %d unused", all.early_routed, all.early_unused));
  }
  if (all.expert_read_bytes > 0 && all.sequence_union_bytes > all.expert_read_bytes) {
    parts.push_back(
        absl::StrFormat("batch dedup %.2fx",
                        static_cast<double>(all.sequence_union_bytes) / all.expert_read_bytes));
  }
  if (all.expert_waves > all.moe_passes) {
    parts.push_back(absl::StrFormat("waves %d over %d layer passes", all.expert_waves,
                                    all.moe_passes));
  }
  // Chunks read each expert once for all their tokens; batches once for all
  // their sequences.
  if (all.sequence_union_bytes > 0 && all.token_by_token_bytes > all.sequence_union_bytes) {
    parts.push_back(
        absl::StrFormat("prefill dedup %.1fx",
                        static_cast<double>(all.token_by_token_bytes) / all.sequence_union_bytes));
  }
  return absl::StrCat("[", absl::StrJoin(parts, " | "), "]");
}

std::string Session::StageReport() const {
  std::string report;
  const std::array<PhaseFigures, 2> phases = Phases();
  for (Phase phase : {kPrefill, kDecode}) {
    const PhaseFigures& f = phases[phase];
    const ForwardStats& st = f.forward;
    if (st.tokens == 0) continue;
    const double total = f.seconds;
    const double compute = st.seconds_attention + st.seconds_dense + st.seconds_route +
                           st.seconds_expert + st.seconds_head;
    absl::StrAppendFormat(&report, "  %s, %d tokens:\n", phase == kPrefill ? "prefill" : "decode",
                          st.tokens);
    auto row = [&](const char* name, double seconds) {
      absl::StrAppendFormat(&report, "  %-13s %8.3f s %5.1f%%\n", name, seconds,
                            total > 0 ? 100 * seconds / total : 0.0);
    };
    row("attention", st.seconds_attention);
    row("dense+shared", st.seconds_dense);
    row("route", st.seconds_route);
    row("fetch_wait", st.seconds_fetch_wait);
    row("expert", st.seconds_expert);
    row("head", st.seconds_head);
    if (st.computed_as_landed > 0) {
      // Of the records read for this pass: misses, and those a prediction or an
      // early route brought in (a demand that joins their read computes them as they land).
      absl::StrAppendFormat(&report, "  %-13s %d of %d records read\n", "as landed",
                            st.computed_as_landed,
                            st.CountOf(Served::kDisk) + st.CountOf(Served::kLookahead) +
                                st.CountOf(Served::kCertain));
    }
    // What the disk read, predictions included; without the source's counters
    // (the fast path), what the misses read.
    const uint64_t read = ReadBytes(f.source_counters).value_or(st.BytesOf(Served::kDisk));
    absl::StrAppendFormat(
        &report, "  %-13s %8.3f s: compute %.3f s, waiting for reads %.1f%%, %s read a token\n",
        "total", total, compute, total > 0 ? 100 * st.seconds_fetch_wait / total : 0.0,
        FormatBytes(read / st.tokens));
    if (const uint64_t rows = Counter(f.source_counters, "engram.rows", ""); rows > 0) {
      absl::StrAppendFormat(&report, "  %-13s %d rows a token, %.1f%% in its cache, %s read a token\n",
                            "engram", rows / st.tokens,
                            100.0 * Counter(f.source_counters, "engram.row_hits", "") / rows,
                            FormatBytes(Counter(f.source_counters, "engram.read_bytes", "") /
                                        st.tokens));
    }
    if (st.engram_passes > 0) {  // EngramReader: a pass's mean
      const double per_pass = 1e3 / static_cast<double>(st.engram_passes);
      absl::StrAppendFormat(&report,
                            "  %-13s rows in %.2f ms from a pass's start; its first engram layer "
                            "starts at %.2f ms, waits %.2f ms\n",
                            "engram time", st.seconds_engram_arrive * per_pass,
                            st.seconds_engram_need * per_pass, st.seconds_engram_wait * per_pass);
    }
    // Overlap efficiency: 1.0 when the phase takes only as long as its busier
    // side, the disk or the CPU. Only an embedded store reports its disk time.
    if (f.source_counters.contains("expertd.store.disk_busy_us") && total > 0) {
      const double io = Counter(f.source_counters, "disk_busy_us") / 1e6;
      absl::StrAppendFormat(&report, "  %-13s max(I/O %.3f s, compute %.3f s) / %.3f s = %.2f\n",
                            "overlap", io, compute, total, std::max(io, compute) / total);
    }
  }
  return report;
}

std::string Session::state_key() const {
  // Everything that changes the bits of the state (--experts-per-token its
  // routes), and the archive's own format.
  return absl::StrCat(FingerprintHex(container_->manifest().fingerprint), " context ",
                      options_.engine.max_positions, " activations ",
                      options_.compute.q8_activations ? "q8" : "f32", " experts-per-token ",
                      options_.engine.experts_per_token, " state v1");
}

}  // namespace warp::computed
