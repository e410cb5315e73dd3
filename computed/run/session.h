#pragma once

// Session: everything one run of a model needs, put together from the
// command line — the container, the memory budget, the expert source (with
// its cache), the thread pool and the Transformer — plus the run's routing
// trace, learned usage and stats line.
//
// Thread-compatible.

#include <chrono>
#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/format/usage_file.h"
#include "common/store/expert_source.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/transformer.h"
#include "computed/planner/planner.h"

namespace warp::computed {

struct SessionOptions {
  std::string model;
  std::vector<std::string> bank_dirs;    // --banks / WARP_BANK_SHARDS
  std::vector<std::string> stores;       // --stores
  std::optional<uint64_t> budget_bytes;  // --budget; default: the planner's
  uint32_t threads = 0;                  // 0: every core
  uint32_t io_threads = 4;               // embedded store reader threads (reads in flight)
  std::vector<int> cpus;                 // --cpus: pin compute threads
  uint32_t prefill_chunk = 0;            // 0: the whole prompt at once
  bool prefetch = true;                  // --no-prefetch: false
  bool certain = true;                   // --no-certain: false
  uint32_t lookahead = 6;                // --lookahead / WARP_LOOKAHEAD
  uint32_t experts_per_token = 0;        // 0: the model's
  uint32_t max_positions = 4096;         // context
  std::string trace_path;                // --trace: routing trace
  bool learn = false;                    // --learn: merge usage into usage.warp
};

class Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Open(const SessionOptions& options);
  ~Session();

  // Runs `tokens` in chunks of prefill_chunk; returns [n][vocab] logits.
  absl::StatusOr<std::vector<float>> Prefill(std::span<const int32_t> tokens);
  // The same, returning only the last position's logits [vocab]: what a
  // generation needs, without [n][vocab] floats for a long prompt.
  absl::StatusOr<std::vector<float>> PrefillLast(std::span<const int32_t> tokens);
  // One decode step.
  absl::StatusOr<std::vector<float>> Step(int32_t token);

  // Writes usage.warp when --learn (merged with the file's counts).
  absl::Status Finish();

  // "[56 tokens 3.1 tok/s | experts 17327 hit / 1489 miss 92% | read 12.4 GB | ...]"
  std::string StatsLine() const;
  // One line per stage: seconds, share of the run, and the overlap figure.
  std::string StageReport() const;

  // Positions in the KV cache, and its capacity.
  uint32_t position() const { return transformer_->position(); }
  uint32_t max_positions() const { return options_.max_positions; }
  // Forgets the state from `position` on (a chat history re-rendered
  // differently); returns where the model continues from (Transformer::Rewind).
  uint32_t Rewind(uint32_t position) { return transformer_->Rewind(position); }
  // Marks position() as one Rewind can return to (Transformer::Checkpoint).
  void Checkpoint() { transformer_->Checkpoint(); }

  Transformer& transformer() { return *transformer_; }
  const BudgetDecision& budget() const { return budget_; }
  uint32_t vocab_size() const { return transformer_->config().vocab_size; }

 private:
  Session() = default;
  void OnRoute(uint32_t position, uint32_t layer, const std::vector<uint32_t>& experts);

  SessionOptions options_;
  std::shared_ptr<const Container> container_;
  BudgetDecision budget_;
  std::unique_ptr<ExpertSource> source_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<Transformer> transformer_;
  std::ofstream trace_;
  UsageTable usage_;  // this run's counts
  std::chrono::steady_clock::time_point start_;
  std::map<std::string, uint64_t> counters_at_start_;
};

}  // namespace warp::computed
