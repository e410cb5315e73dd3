#pragma once

// Session: everything one run of a model needs, put together from the
// command line — the container, the memory budget, the expert source (with
// its cache), the thread pool and the Transformer — plus the run's routing
// trace, learned usage and stats line.
//
// Thread-compatible.

#include <array>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/compute/compute_context.h"
#include "common/compute/thread_pool.h"
#include "common/format/container.h"
#include "common/format/usage_file.h"
#include "common/memory/memory_governor.h"
#include "common/memory/memory_limits.h"
#include "common/store/engram_store.h"
#include "common/store/expert_source.h"
#include "computed/engine/transformer.h"
#include "computed/planner/planner.h"
#include "computed/run/sources.h"

namespace warp::computed {

// The compute side of the engine: what the ThreadPool is made of.
struct ComputeOptions {
  uint32_t threads = 0;   // --threads; 0: every core
  std::vector<int> cpus;  // --cpus: pin compute threads
  // --activations q8 (the default): 4-bit weights dot 8-bit activations
  // (kernels/q8_activations.h); false computes them in f32 (--activations f32).
  bool q8_activations = true;
};

// What a run adds around the engine: its memory, its prompt's chunks, and
// what it writes.
struct RunOptions {
  std::optional<uint64_t> budget_bytes;  // --budget; default: the planner's
  uint32_t prefill_chunk = 0;            // --prefill-chunk; 0: the whole prompt at once
  std::string trace_path;                // --trace: routing trace
  bool learn = false;                    // --learn: merge usage into usage.warp
  bool preload = false;                  // --preload: fill the expert cache before the first token
};

// One run of a model, passed whole: where its experts come from (the expert
// source, with the embedded stores' knobs), what the engine does, what it
// computes on, and the run around it. Each part's flags are declared beside
// it (computed/cli/session_flags.h; the store's, common/store/store_flags.h).
struct SessionOptions {
  std::string model;
  SourceOptions source;
  // max_positions: the context of each sequence; sequences: serve --parallel.
  // The session sets cache_records (from the budget) and on_route (--trace, --learn).
  Transformer::Options engine;
  ComputeOptions compute;
  RunOptions run;
};

class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Open(const SessionOptions& options);
  ~Session();

  // Runs `tokens` of `sequence` in chunks of prefill_chunk; returns [n][vocab] logits.
  absl::StatusOr<std::vector<float>> Prefill(std::span<const int32_t> tokens,
                                             uint32_t sequence = 0);
  // The same, returning only the last position's logits [vocab]: what a
  // generation needs, without [n][vocab] floats for a long prompt.
  absl::StatusOr<std::vector<float>> PrefillLast(std::span<const int32_t> tokens,
                                                 uint32_t sequence = 0);
  // The same, computing no logits: a prompt's part whose end is not sampled.
  absl::Status Feed(std::span<const int32_t> tokens, uint32_t sequence = 0);
  // One decode step.
  absl::StatusOr<std::vector<float>> Step(int32_t token, uint32_t sequence = 0);

  // Chunks of several sequences in one pass (serve --parallel: decode steps,
  // beside prompt chunks): the logits of each chunk, in the order given, as
  // Forward on that sequence alone gives them; the MoE layers read the union
  // of their experts once. A decode step when every chunk is one token, else
  // counted as prefill. A failure leaves each of them with an unknown state.
  absl::StatusOr<std::vector<std::vector<float>>> ForwardBatch(
      std::span<const Transformer::SequenceChunk> chunks);

  // Writes usage.warp when --learn (merged with the file's counts).
  absl::Status Finish();

  // Prefill and decode apart: "[prefill 64 tokens 40.1 tok/s: experts 310 hit /
  // 1202 miss 20%, read 28.9 GiB | decode 56 tokens 3.1 tok/s: experts 2650 hit /
  // 810 miss 72%, 120 lookahead hits, read 20.1 GiB, 367 MiB a token | lookahead
  // recall 43%, read 6.2 GiB, 3.4 GiB unused]". Hits are demand hits only.
  std::string StatsLine() const;
  // One line per stage: seconds, share of the run, and the overlap figure.
  std::string StageReport() const;

  // Positions in the KV cache of `sequence`, and its capacity.
  uint32_t position(uint32_t sequence = 0) const { return transformer_->position(sequence); }
  uint32_t max_positions() const { return options_.engine.max_positions; }
  uint32_t sequences() const { return transformer_->sequences(); }
  uint32_t prefill_chunk() const { return options_.run.prefill_chunk; }  // 0: a prompt at once
  // The config's max_position_embeddings (0: it does not say): no prompt may
  // reach past it (ResourceExhausted); decoding may, with a warning at Open.
  uint32_t trained_positions() const { return transformer_->config().max_position_embeddings; }
  // Forgets the state from `position` on (a chat history re-rendered
  // differently); returns where the model continues from (Transformer::Rewind).
  uint32_t Rewind(uint32_t position, uint32_t sequence = 0) {
    return transformer_->Rewind(position, sequence);
  }
  // Marks position(sequence) as one Rewind can return to (Transformer::Checkpoint).
  void Checkpoint(uint32_t sequence = 0) { transformer_->Checkpoint(sequence); }

  // The expert source's own counters ("expertd.store.NAME"), since it opened.
  // The expert source's counters, and the engram store's (engram.*).
  std::map<std::string, uint64_t> SourceCounters() const { return AllCounters(); }
  // The experts this run routed to (with --learn; empty without): each
  // (layer, expert)'s count. Read on the thread that runs the forward passes.
  const UsageTable& usage() const { return usage_; }
  // The memory governor's actions on the expert cache (0 without a governor).
  uint64_t governor_shrinks() const { return governor_ ? governor_->shrinks() : 0; }
  uint64_t governor_grows() const { return governor_ ? governor_->grows() : 0; }

  Transformer& transformer() { return *transformer_; }
  // What a saved sequence state is valid for (the disk prompt cache's key):
  // the model's fingerprint, the context, the activations' arithmetic, the
  // experts per token, the state format's version.
  std::string state_key() const;
  const BudgetDecision& budget() const { return budget_; }
  uint32_t vocab_size() const { return transformer_->config().vocab_size; }

 private:
  Session() = default;
  // Open's steps, in order: the plan of the model at this context; the
  // budget; the expert source inside it; the governor that resizes the
  // source's cache under a cgroup; the warm set; the engine; the run's outputs.
  absl::StatusOr<PlanFigures> Plan() const;
  absl::Status Budget(const PlanFigures& plan, const MemoryLimits& limits);
  absl::Status OpenSource(const PlanFigures& plan, bool warm_set);
  void StartGovernor(const PlanFigures& plan, const MemoryLimits& limits);
  absl::Status WarmCache(std::span<const ExpertKey> hottest);
  absl::Status CreateEngine(const PlanFigures& plan);
  absl::Status OpenOutputs();

  void OnRoute(uint32_t position, uint32_t layer, const std::vector<uint32_t>& experts);

  // A run's figures split by what the engine was doing: prefill (prompt
  // chunks) or decode (one token a step).
  enum Phase { kPrefill = 0, kDecode = 1 };
  struct PhaseFigures {
    ForwardStats forward;                             // this phase's share of the engine's counters
    double seconds = 0;                               // wall time inside the engine
    std::map<std::string, uint64_t> source_counters;  // this phase's share of the source's
  };
  // Prefill, PrefillLast and Feed: the prompt in chunks of prefill_chunk, as
  // one prefill call; every position's logits, the last one's, or none.
  absl::StatusOr<std::vector<float>> PrefillChunks(std::span<const int32_t> tokens,
                                                   Transformer::Logits logits_of,
                                                   uint32_t sequence);
  // Runs `forward` (engine calls) as part of `phase`, adding to its figures.
  absl::Status InPhase(Phase phase, const std::function<absl::Status()>& forward);
  // Each phase's figures, the current phase's source counters up to now.
  std::array<PhaseFigures, 2> Phases() const;
  std::map<std::string, uint64_t> AllCounters() const;

  SessionOptions options_;
  std::shared_ptr<const Container> container_;
  BudgetDecision budget_;
  std::unique_ptr<ExpertSource> source_;
  ExpertComputer* computer_ = nullptr;  // source_'s, when the daemons compute the experts
  std::unique_ptr<EngramStore> engram_;  // models with an engram memory
  std::unique_ptr<MemoryGovernor> governor_;  // resizes source_'s cache; null outside a cgroup
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ComputeContext> compute_;  // over pool_
  std::unique_ptr<Transformer> transformer_;
  std::ofstream trace_;
  UsageTable usage_;  // this run's counts
  std::array<PhaseFigures, 2> phases_;
  Phase phase_ = kPrefill;
  std::map<std::string, uint64_t> counters_at_phase_start_;  // the source's, when phase_ began
};

}  // namespace warp::computed
