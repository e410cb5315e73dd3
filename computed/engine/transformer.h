#pragma once

// Transformer: the forward pass of one model, trunk resident, routed experts
// read through an ExpertSource every time they are needed. It walks the
// family's layer plan (computed/model/layer_plan.h): per layer a token mixer
// and an FFN object, joined by the residual scheme; it never asks which
// family it runs. Tokens are processed in chunks; a chunk of n tokens gives
// bit for bit the logits of n one-token steps (every reduction has a fixed
// order, DESIGN.md Invariant 1). It holds `sequences` independent
// conversations (their mixer states), and one ForwardBatch runs chunks of
// several of them together: each MoE layer reads the union of their experts
// once, and each sequence gets the bits it would get alone.
//
// Thread-compatible: one Forward at a time; it uses the pool for matrix rows.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/compute/compute_context.h"
#include "common/compute/expert_computer.h"
#include "common/format/container.h"
#include "common/store/expert_source.h"
#include "computed/engine/early_route.h"
#include "computed/engine/engram_memory.h"
#include "computed/engine/engram_reader.h"
#include "computed/engine/ffn.h"
#include "computed/engine/ffns/moe_ffn.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/lookahead.h"
#include "computed/engine/residual.h"
#include "computed/engine/router.h"
#include "computed/engine/token_mixer.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/layer_plan.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// The most sequences one Transformer holds (each has a full-context state).
inline constexpr uint32_t kMaxSequences = 64;

class Transformer {
 public:
  struct Options {
    uint32_t max_positions = 4096;   // context capacity, of each sequence
    uint32_t sequences = 1;          // conversations with a state of their own (serve --parallel)
    uint32_t experts_per_token = 0;  // 0: the model's top-k
    // Issue a layer's expert reads, then compute the shared expert while
    // they fly, computing each expert as it lands. false: the
    // plain synchronous path (read everything, then compute), for comparison.
    bool prefetch = true;
    // Read hash layers' experts CERTAIN before the embedding (their routing
    // is the token's); false only to measure what that saves.
    bool certain = true;
    uint32_t lookahead = 6;  // experts per token predicted as each MoE layer starts; 0: off
    // Hint only the ranks right at least this often (Lookahead); 0: all of them.
    double lookahead_precision = kDefaultLookaheadPrecision;
    uint32_t lookahead_depth = 1;  // MoE layers predicted at a layer's start: 1 or 2
    // With prefetch, route pre-norm MoE layers before their mixer's output
    // projection and read those records then (EarlyRoute): where the
    // container holds the fold, or everywhere, folding at load (~0.4 s a layer
    // on a K2-sized attention, docs/LEARNED.md).
    EarlyRoutes early_routes = EarlyRoutes::kStored;
    // Records a MoE layer may hold at once (MoeOptions::cache_records); 0: no bound.
    uint64_t cache_records = 0;
    OnRoute on_route;  // each token's routed experts, for --trace and --learn
    // The container's engram tables (DeepSeek V4.1), read through a store of
    // their own; required by a model with engram_layer_ids.
    EngramStore* engram_store = nullptr;
    // Where the routed experts are computed instead of reading their records
    // (MoeOptions::remote); null: records.
    ExpertComputer* expert_computer = nullptr;
  };

  // Loads the trunk of `container`, checks that every tensor the plan needs
  // is there with the right shape, and binds each layer's weights.
  static absl::StatusOr<std::unique_ptr<Transformer>> Create(
      std::shared_ptr<const Container> container, ExpertSource& experts, ComputeContext& compute,
      const Options& options);

  // The rows of a chunk the head computes logits for. kNone: a prompt's chunk
  // before its last, whose logits nobody reads (the k2-slice's 32,768-row
  // head is 11 ms of a token's 80-90 ms, with the disk idle).
  enum class Logits { kEvery, kLast, kNone };

  // Runs `tokens` of `sequence` at positions position(sequence) ..
  // position(sequence) + n - 1 and returns the logits of every one,
  // [n][vocab], of the last one only, or none. Fails (and computes nothing more)
  // if an expert cannot be read or verified.
  absl::StatusOr<std::vector<float>> Forward(std::span<const int32_t> tokens,
                                             Logits logits = Logits::kEvery, uint32_t sequence = 0);

  // A model with an engram memory (DeepSeek V4.1): starts reading the engram
  // rows of `tokens`, which a later Forward of `sequence` will run from
  // `first_position` (a prompt's next chunk, while this one computes).
  // Nothing for other models; never changes a result.
  void PrefetchEngram(std::span<const int32_t> tokens, uint32_t first_position,
                      uint32_t sequence);

  // One sequence's part of a batched pass.
  struct SequenceChunk {
    uint32_t sequence = 0;
    std::span<const int32_t> tokens;
    Logits logits = Logits::kLast;
  };
  // Runs every chunk in one pass (each at its sequence's position; no two of
  // one sequence) and returns each chunk's logits as Forward would: bit for
  // bit those of the chunk run alone. A failure leaves every sequence of the
  // batch with an unknown state (rewind it).
  absl::StatusOr<std::vector<std::vector<float>>> ForwardBatch(
      std::span<const SequenceChunk> chunks);

  uint32_t sequences() const { return static_cast<uint32_t>(sequences_.size()); }
  uint32_t position(uint32_t sequence = 0) const { return sequences_[sequence].position; }
  void Reset() { Rewind(0); }
  // Forgets the state of `sequence` from `position` on; returns where it
  // continues from: `position`, or earlier when a layer no longer holds what
  // precedes it (a sliding window: 0; a recurrent state: its checkpoint, or 0).
  uint32_t Rewind(uint32_t position, uint32_t sequence = 0);
  // Marks position(sequence) as one Rewind can return to (recurrent states
  // keep a copy).
  void Checkpoint(uint32_t sequence = 0);
  // One sequence's whole state (every layer's, the engram's token history,
  // the position) as bytes, and back (state_archive.h): a later Forward of
  // the loaded sequence gives the bits the saved one would have.
  std::string SaveSequence(uint32_t sequence = 0);
  // DataLoss naming the byte offset when `state` is not a state of this
  // model and context; the sequence is then reset to position 0.
  absl::Status LoadSequence(std::string_view state, uint32_t sequence = 0);
  // Bytes of every layer's state in every sequence (KV caches, recurrent
  // states and their checkpoints), allocated at creation.
  uint64_t StateBytes() const;

  const ModelConfig& config() const { return config_; }
  const ModelPlan& plan() const { return plan_; }
  const ForwardStats& stats() const { return stats_; }
  const LookaheadStats& lookahead_stats(uint32_t depth = 1) const {
    return lookahead_->stats(depth);
  }
  uint32_t lookahead_depth() const { return lookahead_->depth(); }

 private:
  Transformer(std::shared_ptr<const Container> container, ModelConfig config, ModelPlan plan,
              std::unique_ptr<TrunkWeights> weights, ExpertSource& experts, ComputeContext& compute,
              const Options& options);

  absl::Status CheckTensors() const;
  // Every chunk names a distinct sequence, fits its context and holds
  // tokens of the vocabulary.
  absl::Status CheckChunks(std::span<const SequenceChunk> chunks) const;
  // DataLoss naming the layer and position of the first NaN or infinity in
  // `values` (rows of `width`): nothing computed from it may be sampled.
  absl::Status CheckFinite(std::span<const float> values, uint64_t width, uint32_t layer,
                           std::string_view sublayer, std::span<const uint32_t> positions) const;
  // Hash layers route by token: their records are known before the embedding
  // and read at once, CERTAIN (DeepSeek V4).
  void IssueCertainReads(std::span<const int32_t> tokens);
  // Folds each pre-norm MoE layer's router through its output projection.
  void BuildEarlyRoutes();
  // Runs layer's mixer over every chunk (each sequence against its own
  // state) into delta; with `early`, its records are read as soon as each
  // chunk's output projection input is known.
  void RunMixers(uint32_t layer, std::span<const SequenceChunk> chunks,
                 std::span<const uint32_t> begins, std::span<const uint32_t> positions,
                 std::span<const float> x, std::span<float> delta, EarlyRoute* early);
  absl::Status BuildLayers();
  // The engram's reader and memories (DeepSeek V4.1), where the model has one.
  absl::Status BuildEngram();

  std::shared_ptr<const Container> container_;
  ModelConfig config_;
  ModelPlan plan_;
  std::unique_ptr<TrunkWeights> weights_;
  ExpertSource& experts_;
  ComputeContext& compute_;
  Options options_;
  MoeOptions moe_options_;
  ForwardStats stats_;
  kernels::MatrixView embed_, head_;
  std::unique_ptr<ResidualScheme> residual_;
  std::vector<std::unique_ptr<Router>> routers_;  // [num_layers], null for dense layers
  std::unique_ptr<Lookahead> lookahead_;
  std::vector<std::unique_ptr<EarlyRoute>> early_routes_;  // [num_layers], null where none
  // One conversation: its own mixer per layer (the mixers hold the state),
  // and how far it has run.
  struct Sequence {
    std::vector<std::unique_ptr<TokenMixer>> mixers;  // [num_layers]
    uint32_t position = 0;
  };
  std::vector<Sequence> sequences_;
  std::vector<std::unique_ptr<Ffn>> ffns_;  // [num_layers], shared by the sequences
  std::unique_ptr<EngramReader> engram_reader_;                 // models with an engram
  std::vector<std::unique_ptr<EngramMemory>> engram_memories_;  // [num_layers], null where none
};

}  // namespace warp::computed
