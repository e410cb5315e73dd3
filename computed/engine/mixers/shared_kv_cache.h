#pragma once

// SharedKvCache: what a DeepSeek V4.1 KV source layer computes for the
// layers of its group (CSA2). Per closed group of `rate` positions one latent
// = RMSNorm(sum_j softmax_j(gate_j) kv_j) (rate 1: RMSNorm(kv), no gate);
// from it the entry its group attends to (rope at the group's first
// position, FP4 round trip with E4M3 scales per 16) and the index key its
// index sources score (RMSNorm(wk latent), rope, FP4 round trip with
// power-of-two scales per 32). It keeps the open group's rows between
// forward passes, and one checkpoint of them for chat.
//
// Thread-compatible: written by its layer, read by the layers after it.

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "common/kernels/matrix_view.h"
#include "computed/engine/ops.h"
#include "computed/engine/state_archive.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/kinds/shared_compressed_mqa.h"

namespace warp::computed {

class SharedKvCache {
 public:
  // Binds the source's compressor and index-key tensors; room for the
  // entries of `context` positions. `rope`: the compressed branch's.
  SharedKvCache(const ModelConfig& config, const TrunkWeights& weights,
                const SharedCompressedMqaTensors& tensors, uint32_t rate, const Rope& rope,
                uint32_t context);

  const kernels::MatrixView& kv_proj() const { return kv_proj_; }
  // Empty at rate 1.
  const kernels::MatrixView& gate_proj() const { return gate_proj_; }

  // Folds in the next position's projections, kv and gate [head_dim] (gate
  // null at rate 1); closes a group (an entry and its key) at its last position.
  void Add(const float* kv, const float* gate);

  uint32_t rate() const { return rate_; }
  uint32_t entries() const { return count_; }
  const float* Entry(uint32_t i) const { return &entries_[uint64_t{i} * dim_]; }
  const float* Key(uint32_t i) const { return &keys_[uint64_t{i} * key_dim_]; }
  // Entries a query at `pos` may see: those of groups closed at or before it.
  uint32_t VisibleAt(uint32_t pos) const { return std::min(count_, (pos + 1) / rate_); }

  uint64_t bytes() const;
  // As KvCompressor: forgets positions >= `position`; returns where it
  // continues from — `position` at a group boundary or within the open
  // group, else the checkpoint when it lies at or before, else the group's start.
  uint32_t Rewind(uint32_t position);
  void Checkpoint();
  // The entries so far, the open window and the checkpoint (state_archive.h).
  void Archive(StateArchive& archive);

 private:
  struct Open {                   // the positions not yet pooled
    std::vector<float> kv, gate;  // [rate][dim]
    uint32_t filled = 0;
  };
  void Close();

  uint32_t dim_, key_dim_, rate_;
  float eps_;
  const Rope& rope_;
  kernels::MatrixView kv_proj_, gate_proj_, key_proj_;
  std::span<const float> norm_, key_norm_;
  std::vector<float> entries_;  // [context / rate][dim]
  std::vector<float> keys_;     // [context / rate][key_dim]
  uint32_t count_ = 0, end_ = 0;
  Open open_;
  struct Saved {
    Open open;
    uint32_t count, end;
  };
  std::optional<Saved> saved_;
};

}  // namespace warp::computed
