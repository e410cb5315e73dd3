#pragma once

// DeepSeek V4's attention: q-LoRA queries (q_a, q_norm, q_b, then a
// weightless RMSNorm per head) against ONE head that is key and value both
// (wkv, kv_norm), rope on each head's trailing qk_rope_head_dim dims
// (interleaved pairs); the keys are the last sliding_window positions plus,
// on compressed layers, KvCompressor entries — all of them closed so far
// (HCA), or those the LightningIndexer picks (CSA). A learned sink per head
// joins the softmax; the output's rope dims are rotated back at the query's
// position (values carry the keys' rotation); the grouped low-rank output
// projection maps o_groups groups of heads through wo_a block by block,
// then wo_b. Tokens run one by one, so a chunk gives the bits of single steps.
//
// Thread-compatible: one Forward at a time.

#include <memory>
#include <optional>

#include "computed/engine/mixers/kv_compressor.h"
#include "computed/engine/mixers/lightning_indexer.h"
#include "computed/engine/ops.h"
#include "computed/engine/token_mixer.h"

namespace warp::computed {

// The state of one layer: the sliding ring of K = V rows and the
// compressors' entries and open windows; a rewind goes back as far as the
// part that holds least.
class CompressedMqaState : public LayerState {
 public:
  CompressedMqaState(uint32_t context, uint32_t window, uint32_t head_dim)
      : window_(context, window, {head_dim}) {}

  PositionRows& window() { return window_; }
  void Add(KvCompressor* compressor) { compressors_.push_back(compressor); }

  uint64_t bytes() const override;
  uint32_t Rewind(uint32_t position) override;
  void Checkpoint() override;
  void Archive(StateArchive& archive) override;

 private:
  PositionRows window_;
  std::vector<KvCompressor*> compressors_;  // owned by the mixer
};

class CompressedMqaAttention : public TokenMixer {
 public:
  CompressedMqaAttention(const ModelConfig& config, const MixerPlan& plan,
                         const CompressedMqaParams& params, const TrunkWeights& weights,
                         uint32_t context, ComputeContext& compute);

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override;
  LayerState& state() override { return state_; }

 private:
  // Head h of token q (already normed and rotated) over its keys, into o [head_dim].
  void Attend(const float* q, uint32_t h, uint32_t pos, const std::vector<uint32_t>& entries,
              float* o);

  const ModelConfig& c_;
  ComputeContext& compute_;
  uint32_t window_;
  Rope rope_;
  kernels::MatrixView q_a_, q_b_, kv_, o_a_, o_b_;
  std::span<const float> q_norm_, kv_norm_, sinks_;
  std::unique_ptr<KvCompressor> compressor_;
  std::unique_ptr<LightningIndexer> indexer_;
  CompressedMqaState state_;
};

}  // namespace warp::computed
