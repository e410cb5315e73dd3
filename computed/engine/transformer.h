#pragma once

// Transformer: the forward pass of one model, trunk resident, routed experts
// read through an ExpertSource every time they are needed. Tokens are
// processed in chunks; a chunk of n tokens gives bit for bit the logits of n
// one-token steps (every reduction has a fixed order, DESIGN.md Invariant 1).
//
// Thread-compatible: one Forward at a time; it uses the pool for matrix rows.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/store/expert_source.h"
#include "computed/engine/attention.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Counters of one Transformer since creation.
struct ForwardStats {
  uint64_t tokens = 0;
  uint64_t expert_reads = 0;       // records requested from the source
  uint64_t expert_read_bytes = 0;
  uint64_t expert_uses = 0;        // (token, expert) pairs computed
};

class Transformer {
 public:
  struct Options {
    uint32_t max_positions = 4096;  // KV cache capacity
    uint32_t experts_per_token = 0; // 0: the model's top-k
  };

  // Loads the trunk of `container` and checks that every tensor the
  // architecture needs is there with the right shape.
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(
      std::shared_ptr<const Container> container, ExpertSource& experts, ThreadPool& pool,
      const Options& options);

  // Runs `tokens` at positions position() .. position() + n - 1 and returns
  // the logits of every one, [n][vocab]. Fails (and computes nothing more)
  // if an expert cannot be read or verified.
  absl::StatusOr<std::vector<float>> Forward(std::span<const int32_t> tokens);

  uint32_t position() const { return position_; }
  void Reset() { position_ = 0; }
  const ModelConfig& config() const { return config_; }
  const ForwardStats& stats() const { return stats_; }

 private:
  Transformer(std::shared_ptr<const Container> container, ModelConfig config,
              std::unique_ptr<TrunkWeights> weights, ExpertSource& experts, ThreadPool& pool,
              const Options& options);

  absl::Status CheckTensors() const;
  void Mlp(const std::string& prefix, std::span<const float> x, uint32_t n,
           uint64_t intermediate, std::span<float> out);
  absl::Status Moe(uint32_t layer, std::span<const float> x, uint32_t n, std::span<float> out);

  std::shared_ptr<const Container> container_;
  ModelConfig config_;
  std::unique_ptr<TrunkWeights> weights_;
  ExpertSource& experts_;
  ThreadPool& pool_;
  Options options_;
  std::vector<std::unique_ptr<Attention>> attention_;  // [num_layers]
  uint32_t position_ = 0;
  ForwardStats stats_;
};

}  // namespace warp::computed
