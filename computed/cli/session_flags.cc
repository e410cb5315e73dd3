#include "computed/cli/session_flags.h"

#include <sched.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/status.h"
#include "common/store/eviction_order.h"
#include "computed/planner/planner.h"
#include "computed/run/sources.h"

namespace warp::computed {
namespace {

// Bounds the flags check when parsed (CLI11 names the flag in its message).
constexpr uint32_t kMaxThreads = 1024;          // compute threads: far above any core count
constexpr uint32_t kMaxIoThreads = 256;         // reads in flight: far above any disk's queue
constexpr uint32_t kMaxIoDepth = 4096;          // io_uring's own limit on a ring
constexpr uint32_t kMaxIoPieceKib = 1 << 20;    // UringReader's: 1 GiB
constexpr double kMaxStoreRetrySeconds = 3600;  // an hour: past it, a store is not coming back

// A number in [low, high] (`low_open`: above low); NaN and infinities are not.
CLI::Validator NumberIn(double low, double high, bool low_open = false) {
  return CLI::Validator(
      [=](const std::string& text) -> std::string {
        char* end = nullptr;
        const double value = std::strtod(text.c_str(), &end);
        const bool in = end != text.c_str() && *end == '\0' && std::isfinite(value) &&
                        (low_open ? value > low : value >= low) && value <= high;
        if (in) return "";
        return absl::StrCat(text, " is not a number in ", low_open ? "(" : "[", low, ", ", high,
                            "]");
      },
      "", "NumberIn");
}

// A CPU this process may run on (its affinity mask: a cgroup's cpuset or
// taskset narrow it); pinning to another fails in every worker.
absl::Status CheckAllowedCpu(int id) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return absl::OkStatus();
  if (id < CPU_SETSIZE && CPU_ISSET(id, &allowed)) return absl::OkStatus();
  std::string list;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) absl::StrAppend(&list, list.empty() ? "" : ",", cpu);
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "--cpus: CPU ", id, " is not one this process may run on (allowed: ", list, ")"));
}

}  // namespace

void AddSessionFlags(CLI::App* cmd, SessionFlags& flags) {
  cmd->add_option("model", flags.model, "MODEL.warp")->required();
  cmd->add_option(
      "--budget", flags.budget,
      "Memory budget for trunk + KV + expert cache, e.g. 8G (default: computed plan's)");
  cmd->add_option("--banks", flags.banks,
                  "Shard directories to read experts from, comma-separated (env WARP_BANK_SHARDS)");
  cmd->add_option("--stores", flags.stores,
                  "expertd daemons: unix:PATH, tls:HOST:PORT (gRPC over TLS, with --tls-ca and "
                  "--token-file), tcp:HOST:PORT (plain, a daemon's --insecure loopback), "
                  "fastpath:PATH (zero-copy)");
  cmd->add_option("--tls-ca", flags.store_tls.ca,
                  "PEM CA that signed the tls: daemons' certificates");
  cmd->add_option("--tls-cert", flags.store_tls.cert,
                  "PEM client certificate for tls: daemons that require one (with --tls-key)");
  cmd->add_option("--tls-key", flags.store_tls.key, "PEM private key of --tls-cert");
  cmd->add_option("--token-file", flags.store_tls.token_file,
                  "The token sent to tls: daemons (the file's first; `openssl rand -hex 32`)");
  cmd->add_option("--store-retry-seconds", flags.store_retry_seconds,
                  "How long a store that went away (or is not up yet) is waited for before the "
                  "run fails (default 30 for unix:/fastpath:, 60 for tcp:/tls:; 0: no waiting)")
      ->check(NumberIn(0, kMaxStoreRetrySeconds));
  cmd->add_option("--threads", flags.threads, "Compute threads (default: every core)")
      ->check(CLI::Range(uint32_t{0}, kMaxThreads));
  cmd->add_option("--cpus", flags.cpus, "Pin compute threads to these CPUs, e.g. 0,1");
  cmd->add_option("--io-threads", flags.io_threads,
                  "Reader threads of the embedded store: reads in flight")
      ->capture_default_str()
      ->check(CLI::Range(uint32_t{1}, kMaxIoThreads));
  cmd->add_option(
      "--io-engine", flags.io_engine,
      "How the embedded store reads records: uring (default: pieces in flight) or pread");
  cmd->add_option("--io-depth", flags.io_depth,
                  absl::StrCat("uring: the disk's pieces in flight over all reads of the "
                               "embedded store (default ",
                               UringReader::Options{}.depth, "; measured in docs/EFFICIENCY.md)"))
      ->check(CLI::Range(uint32_t{1}, kMaxIoDepth));
  cmd->add_option("--io-piece-kib", flags.io_piece_kib,
                  absl::StrCat("uring: KiB a piece of a record's read, a multiple of 4 (default ",
                               UringReader::Options{}.piece_bytes / 1024, ")"))
      ->check(CLI::Range(uint32_t{4}, kMaxIoPieceKib));
  cmd->add_flag("--no-ordered-pieces", flags.no_ordered_pieces,
                "uring: each read sends its own pieces, instead of the disk's pieces granted by "
                "priority, then by the read's start (A/B only)");
  cmd->add_flag("--verify-every-read", flags.verify_every_read,
                "Check a record's CRC32C at every read of the embedded store or from a fastpath: "
                "daemon (default: until it first passes)");
  cmd->add_option("--cache-policy", flags.cache_policy,
                  "Eviction order of the embedded expert cache: duel (default), lfru, lru or arc");
  cmd->add_option("--prefill-chunk", flags.prefill_chunk,
                  "Prompt tokens per prefill chunk (default: the whole prompt)");
  cmd->add_flag("--no-prefetch", flags.no_prefetch,
                "Read a layer's experts, then compute (no overlap); independent of --lookahead");
  cmd->add_flag("--no-prefault", flags.no_prefault,
                "Do not fault the expert cache's pages in ahead of use on an idle core (for A/B)");
  cmd->add_flag("--prefault-anytime", flags.prefault_anytime,
                "Fault the expert cache in whenever a core is idle, also while a prefill "
                "computes (for A/B)");
  cmd->add_flag("--no-paced-growth", flags.no_paced_growth,
                "Let the expert cache grow into memory the prefault has not backed yet, even "
                "where fresh memory is slower than the disk (for A/B)");
  cmd->add_flag("--no-foresight", flags.no_foresight,
                "Let evictions take records the lookahead has just predicted (for A/B)");
  cmd->add_flag("--no-certain", flags.no_certain,
                "Do not read hash layers' experts at a chunk's start (DeepSeek V4; for A/B)");
  CLI::Option* early = cmd->add_flag(
      "--early-route", flags.early_route,
      "Route every pre-norm MoE layer before its attention's output projection, folding at "
      "load the routers whose fold the container lacks (~0.4 s a layer on a K2-sized "
      "attention; `computed convert` writes the folds, and then they are on by default)");
  cmd->add_flag("--no-early-route", flags.no_early_route,
                "Route every layer after its attention, even where the container holds the "
                "fold (for A/B)")
      ->excludes(early);
  cmd->add_option("--activations", flags.activations,
                  "q8 (default) or f32: 4-bit weights (q4, MXFP4) dot activations rounded to "
                  "8 bits per 32, in integers, as llama.cpp does (Q4_0 x Q8_0); f32 dots the "
                  "dequantized weights with unrounded activations (exact, ~1.4x slower in RAM)")
      ->check(CLI::IsMember({"f32", "q8"}));
  cmd->add_option("--lookahead", flags.lookahead,
                  "Experts per token predicted for each MoE layer as it starts, read while its "
                  "attention computes (default 6, env WARP_LOOKAHEAD)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--lookahead-precision", flags.lookahead_precision,
                  "Hint a rank of the lookahead only while its guesses are right this often "
                  "(0 to 1, default 0.8; 0: every rank)");
  cmd->add_option("--lookahead-depth", flags.lookahead_depth,
                  "MoE layers the lookahead predicts from one layer's start: 1 (default) or 2 "
                  "(the next MoE layer too, with its own precision gate)");
  cmd->add_option("--experts-per-token", flags.experts_per_token,
                  "Override the model's top-k (a quality trade)");
  cmd->add_option("--trace", flags.trace, "Write the routing trace (position layer experts)");
  cmd->add_flag("--learn", flags.learn, "Record the experts used into the model's usage.warp");
  cmd->add_flag("--preload", flags.preload,
                "Read every expert record the cache holds before the first token (learned "
                "hottest first): a resident model then decodes without reading");
}

void AddSamplingFlags(CLI::App* cmd, SamplerOptions& options) {
  cmd->add_option("--temperature", options.temperature, "Sampling temperature (0: greedy)")
      ->check(NumberIn(0, 100));
  cmd->add_option("--top-k", options.top_k, "Sample among the k best tokens (0: all)");
  cmd->add_option("--top-p", options.top_p, "Nucleus sampling mass (1: off)")
      ->check(NumberIn(0, 1, /*low_open=*/true));
  cmd->add_option("--seed", options.seed, "Sampling seed");
}

absl::StatusOr<SessionOptions> ToSessionOptions(const SessionFlags& flags, uint64_t positions) {
  if (positions > kMaxContextTokens) {
    return absl::InvalidArgumentError(absl::StrCat("the prompt and the tokens to generate need ",
                                                   positions, " positions; WARP's bound is ",
                                                   kMaxContextTokens));
  }
  const auto max_positions = static_cast<uint32_t>(positions);
  SessionOptions options{.model = flags.model,
                         .bank_dirs = SplitList(flags.banks),
                         .stores = SplitList(flags.stores),
                         .threads = flags.threads,
                         .io_threads = flags.io_threads,
                         .prefill_chunk = flags.prefill_chunk,
                         .prefetch = !flags.no_prefetch,
                         .certain = !flags.no_certain,
                         .early_routes = flags.no_early_route ? EarlyRoutes::kOff
                                         : flags.early_route  ? EarlyRoutes::kFolded
                                                              : EarlyRoutes::kStored,
                         .experts_per_token = flags.experts_per_token,
                         .max_positions = max_positions,
                         .trace_path = flags.trace,
                         .learn = flags.learn,
                         .preload = flags.preload};
  absl::StatusOr<EvictionPolicy> policy = ParseEvictionPolicy(flags.cache_policy);
  if (!policy.ok()) return policy.status();
  options.cache_policy = *policy;
  absl::StatusOr<IoBackend> io_backend = ParseIoBackend(flags.io_engine);
  if (!io_backend.ok()) return io_backend.status();
  options.io_backend = *io_backend;
  options.ordered_pieces = !flags.no_ordered_pieces;
  if (flags.io_depth != 0) options.io_depth = flags.io_depth;
  if (flags.io_piece_kib % 4 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--io-piece-kib ", flags.io_piece_kib, ": not a multiple of 4 (a page)"));
  }
  if (flags.io_piece_kib != 0) options.io_piece_bytes = uint64_t{flags.io_piece_kib} * 1024;
  options.verify_every_read = flags.verify_every_read;
  options.prefault_cache = !flags.no_prefault;
  options.prefault_yields_to_prefill = !flags.prefault_anytime;
  options.paced_growth = !flags.no_paced_growth;
  options.foresight = !flags.no_foresight;
  options.q8_activations = flags.activations == "q8";
  options.store_tls = flags.store_tls;
  if (flags.store_retry_seconds) {
    options.store_retry_deadline = std::chrono::milliseconds(
        static_cast<int64_t>(std::llround(*flags.store_retry_seconds * 1000)));
  }
  if (options.bank_dirs.empty()) {
    if (const char* env = std::getenv("WARP_BANK_SHARDS")) options.bank_dirs = SplitList(env);
  }
  if (!flags.budget.empty()) {
    absl::StatusOr<uint64_t> budget = ParseByteSize(flags.budget);
    if (!budget.ok()) return budget.status();
    options.budget_bytes = *budget;
  }
  for (const std::string& cpu : SplitList(flags.cpus)) {
    int id = 0;
    if (!absl::SimpleAtoi(cpu, &id) || id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--cpus: \"", cpu, "\" is not a CPU number"));
    }
    WARP_RETURN_IF_ERROR(CheckAllowedCpu(id));
    options.cpus.push_back(id);
  }
  int lookahead = flags.lookahead;
  if (lookahead < 0) {
    const char* env = std::getenv("WARP_LOOKAHEAD");
    if (env == nullptr || !absl::SimpleAtoi(env, &lookahead) || lookahead < 0) lookahead = 6;
  }
  options.lookahead = static_cast<uint32_t>(lookahead);
  if (flags.lookahead_depth < 1 || flags.lookahead_depth > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lookahead-depth ", flags.lookahead_depth, ": expected 1 or 2"));
  }
  options.lookahead_depth = flags.lookahead_depth;
  if (flags.lookahead_precision) {
    const double precision = *flags.lookahead_precision;
    if (!(precision >= 0 && precision <= 1)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--lookahead-precision ", precision, ": expected 0 to 1"));
    }
    options.lookahead_precision = precision;
  }
  return options;
}

}  // namespace warp::computed
