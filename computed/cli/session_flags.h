#pragma once

// The flags of a session, shared by every command that runs a model (run,
// logits, chat, serve), so the same comparison (budget, prefetch, lookahead,
// threads, chunking, banks, stores) can be made from any of them. Each flag
// writes its field of SessionOptions as it is parsed: the source's and the
// engine's, compute's and the run's are each declared in one function here,
// the embedded store's beside ExpertStore::Options (common/store/store_flags.h).
// `--help` shows the few a run needs first, then one labelled section per part,
// the A/B switches of benchmarks last.

#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "computed/engine/sampler.h"
#include "computed/run/session.h"

namespace warp::computed {

struct SessionFlags {
  SessionOptions options;  // the flags write here
  // What resolves only after parsing, naming its flag when it fails:
  std::string budget;                // --budget SIZE
  std::string cpus;                  // --cpus 0,1
  CLI::Option* lookahead = nullptr;  // unset: WARP_LOOKAHEAD, else the engine's default
};

void AddSessionFlags(CLI::App* cmd, SessionFlags& flags);

// --temperature, --top-k, --top-p, --seed (defaults: greedy).
void AddSamplingFlags(CLI::App* cmd, SamplerOptions& options);

// The parsed options with the environment (WARP_BANK_SHARDS, WARP_LOOKAHEAD),
// the sizes and CPUs checked, and the context the command needs:
// `positions` (prompt + tokens to generate), counted in 64 bits so that no
// flag wraps it; the planner bounds it.
absl::StatusOr<SessionOptions> ResolveSessionOptions(const SessionFlags& flags, uint64_t positions);

}  // namespace warp::computed
