#pragma once

// KvCompressor: DeepSeek V4's pooling of per-position (kv, gate) projections
// into compressed KV entries, one per closed window of `rate` positions:
//   entry_w[c] = RMSNorm(sum_j softmax_j(gate_j[c] + ape_j[c]) kv_j[c]), then rope at w * rate.
// HCA pools each window alone (kv and gate `dim` wide). CSA (overlap) has
// 2 * dim wide projections: entry w pools the first halves of window w - 1
// with the second halves of window w over 2 * rate slots. It keeps the
// current partial window (and, with overlap, the last window's first
// halves) as state between forward passes, plus one checkpoint of that
// state for chat (docs/ENGINE.md#deepseek-v4).
//
// Thread-compatible.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "computed/engine/ops.h"
#include "computed/engine/state_archive.h"
#include "computed/engine/trunk_weights.h"

namespace warp::computed {

class KvCompressor {
 public:
  // Binds `tensors` (width = dim, or 2 * dim with `overlap`); room for the
  // entries of `context` positions.
  KvCompressor(const TrunkWeights& weights, const KvCompressorTensors& tensors, uint32_t dim,
               uint32_t rate, bool overlap, float eps, const Rope& rope, uint32_t context);

  uint32_t width() const { return width_; }
  const kernels::MatrixView& kv_proj() const { return kv_proj_; }
  const kernels::MatrixView& gate_proj() const { return gate_proj_; }

  // Folds in the projections of the next position, kv and gate [width];
  // closes a window (appending an entry) when it is the window's last.
  void Add(const float* kv, const float* gate);

  uint32_t entries() const { return count_; }
  const float* Entry(uint32_t i) const { return &entries_[uint64_t{i} * dim_]; }
  // Entries a query at `pos` may see: those of windows closed at or before it.
  uint32_t VisibleAt(uint32_t pos) const { return std::min(count_, (pos + 1) / rate_); }

  uint32_t position() const { return end_; }
  uint64_t bytes() const;
  // As RecurrentState: forgets positions >= `position` and returns where it
  // continues from — `position` within the open window, else the checkpoint
  // when it lies at or before `position`, else 0.
  uint32_t Rewind(uint32_t position);
  void Checkpoint();
  // The entries so far, the open window and the checkpoint (state_archive.h).
  void Archive(StateArchive& archive);

 private:
  struct Open {                             // what is not yet an entry
    std::vector<float> kv, gate;            // [rate][width], gate with ape added
    std::vector<float> prev_kv, prev_gate;  // overlap: the last window's first halves [rate][dim]
    bool has_prev = false;
    uint32_t filled = 0;
  };
  void Close();

  uint32_t dim_, rate_, width_;
  bool overlap_;
  float eps_;
  const Rope& rope_;
  kernels::MatrixView kv_proj_, gate_proj_;
  std::span<const float> ape_, norm_;
  std::vector<float> entries_;  // [context / rate][dim]
  uint32_t count_ = 0, end_ = 0;
  Open open_;
  struct Saved {
    Open open;
    uint32_t count, end;
  };
  std::optional<Saved> saved_;
};

}  // namespace warp::computed
