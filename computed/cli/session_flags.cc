#include "computed/cli/session_flags.h"

#include <sched.h>

#include <cmath>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/status.h"
#include "common/store/store_flags.h"
#include "computed/planner/planner.h"
#include "computed/run/sources.h"

namespace warp::computed {
namespace {

// Bounds the flags check when parsed (CLI11 names the flag in its message).
constexpr uint32_t kMaxThreads = 1024;          // compute threads: far above any core count
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

// The help's sections after the first ("Options": what a run needs).
constexpr char kSourceGroup[] = "Expert sources (default: the model's own banks, embedded)";
constexpr char kEngineGroup[] = "Engine: prefill chunks, lookahead, early routes";

// Where the experts come from: shard directories, daemons, and how to reach them.
void AddSourceFlags(CLI::App* cmd, SourceOptions& source) {
  cmd->add_option_function<std::string>(
         "--banks", [&source](const std::string& dirs) { source.bank_dirs = SplitList(dirs); },
         "Shard directories to read experts from, comma-separated (env WARP_BANK_SHARDS)")
      ->group(kSourceGroup);
  cmd->add_option_function<std::string>(
         "--stores", [&source](const std::string& list) { source.stores = SplitList(list); },
         "expertd daemons: unix:PATH, tls:HOST:PORT (gRPC over TLS, with --tls-ca and "
         "--token-file), tcp:HOST:PORT (plain, a daemon's --insecure loopback), "
         "fastpath:PATH (zero-copy)")
      ->group(kSourceGroup);
  cmd->add_option("--tls-ca", source.tls.ca, "PEM CA that signed the tls: daemons' certificates")
      ->group(kSourceGroup);
  cmd->add_option("--tls-cert", source.tls.cert,
                  "PEM client certificate for tls: daemons that require one (with --tls-key)")
      ->group(kSourceGroup);
  cmd->add_option("--tls-key", source.tls.key, "PEM private key of --tls-cert")
      ->group(kSourceGroup);
  cmd->add_option("--token-file", source.tls.token_file,
                  "The token sent to tls: daemons (the file's first; `openssl rand -hex 32`)")
      ->group(kSourceGroup);
  cmd->add_option_function<double>(
         "--store-retry-seconds",
         [&source](double seconds) {
           source.store_retry_deadline =
               std::chrono::milliseconds(static_cast<int64_t>(std::llround(seconds * 1000)));
         },
         "How long a store that went away (or is not up yet) is waited for before the "
         "run fails (default 30 for unix:/fastpath:, 60 for tcp:/tls:; 0: no waiting)")
      ->check(NumberIn(0, kMaxStoreRetrySeconds))
      ->group(kSourceGroup);
  cmd->add_option_function<uint64_t>(
         "--engram-cache-mib", [&source](uint64_t mib) { source.engram_cache_bytes = mib << 20; },
         "RAM for the engram tables' records (DeepSeek V4.1), apart from the experts' cache "
         "(default 256; 0: each pass reads its rows from disk)")
      ->check(NumberIn(0, 1 << 20))
      ->group(kSourceGroup);
  cmd->add_option_function<std::string>(
         "--expert-compute",
         [&source](const std::string& name) {
           source.expert_compute = ParseExpertCompute(name).value();  // checked below
         },
         "Where the routed experts are computed: records (read them here), daemons (send the "
         "rows to the --stores that hold them), auto (daemons when every store is across a "
         "network; default)")
      ->check(CLI::IsMember({"auto", "records", "daemons"}))
      ->group(kSourceGroup);
}

// The engine's mechanisms, each of which can be turned off for an A/B.
void AddEngineAbSwitches(CLI::App* cmd, Transformer::Options& engine) {
  cmd->add_flag_callback(
         "--no-prefetch", [&engine] { engine.prefetch = false; },
         "Read a layer's experts, then compute (no overlap); independent of --lookahead")
      ->group(kAbFlagGroup);
  cmd->add_flag_callback(
         "--no-certain", [&engine] { engine.certain = false; },
         "Do not read hash layers' experts at a chunk's start (DeepSeek V4)")
      ->group(kAbFlagGroup);
  cmd->add_flag_callback(
         "--no-early-route", [&engine] { engine.early_routes = EarlyRoutes::kOff; },
         "Route every layer after its attention, even where the container holds the fold")
      ->excludes(cmd->get_option("--early-route"))
      ->group(kAbFlagGroup);
}

// What the engine does: how a prompt is chunked, what is predicted and read
// ahead, which layers route early, how many experts a token takes.
void AddEngineFlags(CLI::App* cmd, SessionFlags& flags, FlagSections sections) {
  Transformer::Options& engine = flags.options.engine;
  if (sections == FlagSections::kAbSwitches) {
    AddEngineAbSwitches(cmd, engine);
    return;
  }
  cmd->add_option("--prefill-chunk", flags.options.run.prefill_chunk,
                  "Prompt tokens per prefill chunk (default: the whole prompt)")
      ->group(kEngineGroup);
  flags.lookahead = cmd->add_option("--lookahead", engine.lookahead,
                                    "Experts per token predicted for each MoE layer as it "
                                    "starts, read while its attention computes (default 6, "
                                    "env WARP_LOOKAHEAD)")
                        ->group(kEngineGroup);
  cmd->add_option("--lookahead-precision", engine.lookahead_precision,
                  "Hint a rank of the lookahead only while its guesses are right this often "
                  "(0 to 1, default 0.8; 0: every rank)")
      ->group(kEngineGroup);
  cmd->add_option("--lookahead-depth", engine.lookahead_depth,
                  "MoE layers the lookahead predicts from one layer's start: 1 (default) or 2 "
                  "(the next MoE layer too, with its own precision gate)")
      ->group(kEngineGroup);
  cmd->add_flag_callback(
         "--early-route", [&engine] { engine.early_routes = EarlyRoutes::kFolded; },
         "Route every pre-norm MoE layer before its attention's output projection, folding "
         "at load the routers whose fold the container lacks (~0.4 s a layer on a K2-sized "
         "attention; `computed convert` writes the folds, and then they are on by default)")
      ->group(kEngineGroup);
  cmd->add_option("--experts-per-token", engine.experts_per_token,
                  "Override the model's top-k (a quality trade)")
      ->group(kEngineGroup);
  cmd->add_option("--trace", flags.options.run.trace_path,
                  "Write the routing trace (position layer experts)")
      ->group(kEngineGroup);
  if (sections == FlagSections::kAll) AddEngineAbSwitches(cmd, engine);
}
}  // namespace

void AddSessionFlags(CLI::App* cmd, SessionFlags& flags) {
  SessionOptions& options = flags.options;
  cmd->add_option("model", options.model, "MODEL.warp")->required();
  // What a run needs: the default section, first.
  cmd->add_option(
      "--budget", flags.budget,
      "Memory budget for trunk + KV + expert cache, e.g. 8G (default: computed plan's)");
  cmd->add_option("--threads", options.compute.threads, "Compute threads (default: every core)")
      ->check(CLI::Range(uint32_t{0}, kMaxThreads));
  cmd->add_option("--cpus", flags.cpus, "Pin compute threads to these CPUs, e.g. 0,1");
  cmd->add_option_function<std::string>(
         "--activations",
         [&options](const std::string& kind) { options.compute.q8_activations = kind == "q8"; },
         "q8 (default) or f32: 4-bit weights (q4, MXFP4) dot activations rounded to "
         "8 bits per 32, in integers, as llama.cpp does (Q4_0 x Q8_0); f32 dots the "
         "dequantized weights with unrounded activations (exact, ~1.4x slower in RAM)")
      ->check(CLI::IsMember({"f32", "q8"}));
  cmd->add_flag("--learn", options.run.learn,
                "Record the experts used into the model's usage.warp");
  cmd->add_flag("--preload", options.run.preload,
                "Read every expert record the cache holds before the first token (learned "
                "hottest first): a resident model then decodes without reading");
  // Then a section per part, the A/B switches of them all last.
  AddSourceFlags(cmd, options.source);
  AddStoreFlags(cmd, options.source.store, StoreFlagsFor::kEmbedded, FlagSections::kTuning);
  AddEngineFlags(cmd, flags, FlagSections::kTuning);
  AddStoreFlags(cmd, options.source.store, StoreFlagsFor::kEmbedded, FlagSections::kAbSwitches);
  AddEngineFlags(cmd, flags, FlagSections::kAbSwitches);
}

void AddSamplingFlags(CLI::App* cmd, SamplerOptions& options) {
  cmd->add_option("--temperature", options.temperature, "Sampling temperature (0: greedy)")
      ->check(NumberIn(0, 100));
  cmd->add_option("--top-k", options.top_k, "Sample among the k best tokens (0: all)");
  cmd->add_option("--top-p", options.top_p, "Nucleus sampling mass (1: off)")
      ->check(NumberIn(0, 1, /*low_open=*/true));
  cmd->add_option("--seed", options.seed, "Sampling seed");
}

absl::StatusOr<SessionOptions> ResolveSessionOptions(const SessionFlags& flags,
                                                     uint64_t positions) {
  if (positions > kMaxContextTokens) {
    return absl::InvalidArgumentError(absl::StrCat("the prompt and the tokens to generate need ",
                                                   positions, " positions; WARP's bound is ",
                                                   kMaxContextTokens));
  }
  SessionOptions options = flags.options;
  options.engine.max_positions = static_cast<uint32_t>(positions);
  if (options.source.bank_dirs.empty()) {
    if (const char* env = std::getenv("WARP_BANK_SHARDS")) {
      options.source.bank_dirs = SplitList(env);
    }
  }
  if (!flags.budget.empty()) {
    WARP_ASSIGN_OR_RETURN(options.run.budget_bytes, ParseByteSize(flags.budget));
  }
  for (const std::string& cpu : SplitList(flags.cpus)) {
    int id = 0;
    if (!absl::SimpleAtoi(cpu, &id) || id < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--cpus: \"", cpu, "\" is not a CPU number"));
    }
    WARP_RETURN_IF_ERROR(CheckAllowedCpu(id));
    options.compute.cpus.push_back(id);
  }
  if (flags.lookahead == nullptr || flags.lookahead->count() == 0) {
    const char* env = std::getenv("WARP_LOOKAHEAD");
    int lookahead = 0;
    if (env != nullptr && absl::SimpleAtoi(env, &lookahead) && lookahead >= 0) {
      options.engine.lookahead = static_cast<uint32_t>(lookahead);
    }
  }
  const Transformer::Options& engine = options.engine;
  if (engine.lookahead_depth < 1 || engine.lookahead_depth > 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lookahead-depth ", engine.lookahead_depth, ": expected 1 or 2"));
  }
  if (!(engine.lookahead_precision >= 0 && engine.lookahead_precision <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lookahead-precision ", engine.lookahead_precision, ": expected 0 to 1"));
  }
  return options;
}

}  // namespace warp::computed
