#pragma once

// Transformer: the forward pass of one model, trunk resident, routed experts
// read through an ExpertSource every time they are needed. Tokens are
// processed in chunks; a chunk of n tokens gives bit for bit the logits of n
// one-token steps (every reduction has a fixed order, DESIGN.md Invariant 1).
//
// Thread-compatible: one Forward at a time; it uses the pool for matrix rows.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/store/expert_source.h"
#include "computed/engine/attention.h"
#include "computed/engine/router.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Counters of one Transformer since creation.
struct ForwardStats {
  uint64_t tokens = 0;
  uint64_t expert_reads = 0;  // records requested (once per chunk and layer)
  uint64_t expert_read_bytes = 0;
  uint64_t expert_uses = 0;             // (token, expert) pairs computed
  uint64_t token_by_token_bytes = 0;    // what one-token steps would have read: the dedup baseline
  uint64_t lookahead_predicted = 0;     // (token, expert) pairs hinted ahead
  uint64_t lookahead_hits = 0;          // routed pairs that had been hinted
  uint64_t lookahead_routed = 0;        // routed pairs at layers that had a hint
  uint64_t lookahead_wasted_bytes = 0;  // hinted records the layer then did not use
  double seconds_route = 0, seconds_fetch_wait = 0, seconds_expert = 0, seconds_attention = 0,
         seconds_dense = 0;  // per stage, summed over layers
};

class Transformer {
 public:
  struct Options {
    uint32_t max_positions = 4096;   // KV cache capacity
    uint32_t experts_per_token = 0;  // 0: the model's top-k
    // Issue a layer's expert reads, then compute the shared expert and the
    // lookahead while they fly, computing each expert as it lands. false: the
    // plain synchronous path (read everything, then compute), for comparison.
    bool prefetch = true;
    uint32_t lookahead = 6;  // experts per token hinted for the next MoE layer; 0: off
    // Called with each token's routed experts (rank order), for --trace and --learn.
    std::function<void(uint32_t position, uint32_t layer, const std::vector<uint32_t>& experts)>
        on_route;
  };

  // Loads the trunk of `container` and checks that every tensor the
  // architecture needs is there with the right shape.
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(
      std::shared_ptr<const Container> container, ExpertSource& experts, ThreadPool& pool,
      const Options& options);

  // Runs `tokens` at positions position() .. position() + n - 1 and returns
  // the logits of every one, [n][vocab], or of the last one only. Fails (and
  // computes nothing more) if an expert cannot be read or verified.
  absl::StatusOr<std::vector<float>> Forward(std::span<const int32_t> tokens,
                                             bool last_only = false);

  uint32_t position() const { return position_; }
  void Reset() { position_ = 0; }
  // Forgets the KV cache from `position` on; later tokens overwrite it.
  void Rewind(uint32_t position) { position_ = std::min(position_, position); }
  const ModelConfig& config() const { return config_; }
  const ForwardStats& stats() const { return stats_; }

 private:
  Transformer(std::shared_ptr<const Container> container, ModelConfig config,
              std::unique_ptr<TrunkWeights> weights, ExpertSource& experts, ThreadPool& pool,
              const Options& options);

  absl::Status CheckTensors() const;
  void Mlp(const std::string& prefix, std::span<const float> x, uint32_t n, uint64_t intermediate,
           std::span<float> out);
  absl::Status Moe(uint32_t layer, std::span<const float> x, uint32_t n, std::span<float> out);
  std::vector<Routing> RouteTokens(uint32_t layer, std::span<const float> x, uint32_t n,
                                   uint32_t top_k);
  // Hints the experts layer `layer`'s successor would pick for `x`.
  void Lookahead(uint32_t layer, std::span<const float> x, uint32_t n);
  // Runs one expert over its tokens: out [m][hidden].
  void RunExpert(const ExpertRecord& record, const BankEntry& bank, std::span<const float> x,
                 const std::vector<uint32_t>& tokens, std::vector<float>& out);

  std::shared_ptr<const Container> container_;
  ModelConfig config_;
  std::unique_ptr<TrunkWeights> weights_;
  ExpertSource& experts_;
  ThreadPool& pool_;
  Options options_;
  std::vector<std::unique_ptr<Attention>> attention_;  // [num_layers]
  // Lookahead predictions, per token, for the layer they were made for.
  std::vector<std::vector<std::vector<uint32_t>>> predicted_;  // [layer][token] -> experts
  uint32_t position_ = 0;
  ForwardStats stats_;
};

}  // namespace warp::computed
