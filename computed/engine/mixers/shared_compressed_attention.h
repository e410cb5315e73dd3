#pragma once

// DeepSeek V4.1's attention (CSA2). As V4's (compressed_mqa_attention.h):
// q-LoRA queries against ONE head that is key and value both, over the last
// sliding_window positions plus compressed entries, a sink per head, the
// output's rope dims rotated back, the grouped low-rank output projection.
// But a layer does not compress for itself: the entries are its KV source's
// (SharedKvCache, owned by that layer's mixer), and which of them it reads
// is its index source's choice for the same token. An index source scores
// the visible index keys, sum_h w_h relu(q_h . k_s) / sqrt(index_head_dim),
// keeps to the candidate source's blocks when one precedes it, and picks
// the top index_topk. The window's rows are FP8 round-tripped and queries
// are not normalized per head, as transformers' V4.1 modeling code does.
// Tokens run one by one, so a chunk gives the bits of single steps.
//
// Thread-compatible: one Forward at a time; the layers of one sequence run
// in order, each reading what the earlier ones published for the same chunk.

#include <memory>
#include <span>
#include <vector>

#include "computed/engine/mixers/shared_kv_cache.h"
#include "computed/engine/ops.h"
#include "computed/engine/token_mixer.h"

namespace warp::computed {

// The window ring and, on a KV source, its shared cache; a rewind goes back
// as far as the part that holds least.
class SharedCompressedState : public LayerState {
 public:
  SharedCompressedState(uint32_t context, uint32_t window, uint32_t head_dim)
      : window_(context, window, {head_dim}) {}

  PositionRows& window() { return window_; }
  void set_cache(SharedKvCache* cache) { cache_ = cache; }

  uint64_t bytes() const override;
  uint32_t Rewind(uint32_t position) override;
  void Checkpoint() override;
  void Archive(StateArchive& archive) override;

 private:
  PositionRows window_;
  SharedKvCache* cache_ = nullptr;  // owned by the mixer
};

class SharedCompressedAttention : public TokenMixer {
 public:
  // `earlier`: the same sequence's mixers of the layers before this one,
  // among them its KV, index and candidate sources.
  SharedCompressedAttention(const ModelConfig& config, const MixerPlan& plan,
                            const SharedCompressedMqaParams& params, const TrunkWeights& weights,
                            uint32_t context, ComputeContext& compute,
                            std::span<const std::unique_ptr<TokenMixer>> earlier);

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override;
  LayerState& state() override { return state_; }

  // What the last Forward published for the layers after it, per token of
  // its chunk: the entries chosen (index sources) and the candidate blocks
  // kept (the candidate source).
  const std::vector<std::vector<uint32_t>>& chosen() const { return chosen_; }
  const std::vector<std::vector<bool>>& candidate_blocks() const { return candidates_; }
  const SharedKvCache* cache() const { return cache_.get(); }

 private:
  // The index source's choice for token t at `pos`: iq [index heads][dim]
  // (rotated, rounded), w [index heads] (scaled).
  void Choose(uint32_t t, uint32_t pos, const float* iq, const float* w);
  // Head h of a query (rotated) over its window and `entries`, into o [head_dim].
  void Attend(const float* q, uint32_t h, uint32_t pos, const std::vector<uint32_t>& entries,
              float* o);

  const ModelConfig& c_;
  ComputeContext& compute_;
  SharedCompressedMqaParams params_;
  Rope rope_;
  kernels::MatrixView q_a_, q_b_, kv_, o_a_, o_b_;
  std::span<const float> q_norm_, kv_norm_, sinks_;
  kernels::MatrixView index_q_, index_weights_;  // index sources
  std::unique_ptr<SharedKvCache> cache_;         // KV sources
  const SharedKvCache* source_ = nullptr;        // the cache read: its own or its source's
  const SharedCompressedAttention* index_source_ = nullptr;
  const SharedCompressedAttention* candidate_source_ = nullptr;
  std::vector<std::vector<uint32_t>> chosen_;    // [token of the chunk]
  std::vector<std::vector<bool>> candidates_;    // [token of the chunk][block]
  SharedCompressedState state_;
};

}  // namespace warp::computed
