#pragma once

// LayerState: what one layer's token mixer keeps between forward passes (the
// K/V or latent cache of attention today; fixed-size recurrent state for
// linear attention), behind one interface: its bytes, as `computed plan`
// counts them (MixerStateBytes), and Rewind, which chat uses to keep the
// longest cached prefix of a re-rendered conversation.
//
// Thread-compatible.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "computed/engine/state_archive.h"

namespace warp::computed {

class LayerState {
 public:
  virtual ~LayerState() = default;

  // Bytes the state holds (allocated once, at its full size).
  virtual uint64_t bytes() const = 0;

  // Forgets positions >= `position`; returns the position the layer can
  // continue from: `position`, or an earlier one when it no longer holds
  // what the next token needs (a sliding window that moved past: 0; a
  // recurrent state: its checkpoint, or 0).
  virtual uint32_t Rewind(uint32_t position) = 0;

  // Remembers the current position as one a later Rewind can return to
  // (chat calls it at the end of each turn's prompt). A cache of positions
  // can return anywhere and ignores it.
  virtual void Checkpoint() {}

  // Writes or reads every field a later Forward or Rewind depends on
  // (state_archive.h): the positions held, their rows, the checkpoint.
  virtual void Archive(StateArchive& archive) = 0;
};

// Rows of float32 per position (e.g. K and V, or latent and rope key), for
// the positions a mixer can still attend to. With `window` 0 it keeps every
// position up to `context`; with a window it is a ring of window +
// kSlidingRewindSlack positions (docs/ENGINE.md#state).
class PositionRows : public LayerState {
 public:
  // `widths`: floats per position of each row kind.
  PositionRows(uint32_t context, uint32_t window, std::vector<uint64_t> widths);

  // Row `kind` of position `pos`. REQUIRES: pos is held (below end(), and
  // within the ring when windowed).
  // A kind of width 0 (NoPE MLA's rope keys) has no storage: its row is an
  // empty range at data() (indexing the empty vector was out of bounds, which
  // _GLIBCXX_ASSERTIONS in the sanitized build caught).
  float* Row(size_t kind, uint32_t pos) {
    return rows_[kind].data() + Slot(pos) * widths_[kind];
  }
  const float* Row(size_t kind, uint32_t pos) const {
    return rows_[kind].data() + Slot(pos) * widths_[kind];
  }
  // Marks `pos` written: positions up to it are held.
  void Written(uint32_t pos) { end_ = pos + 1; }
  // The first position a token at `pos` attends to.
  uint32_t FirstVisible(uint32_t pos) const {
    return window_ == 0 || pos + 1 < window_ ? 0 : pos + 1 - window_;
  }

  uint64_t bytes() const override;
  uint32_t Rewind(uint32_t position) override;
  // The held positions only (a 4K-token prompt in an 8K context: half the rows).
  void Archive(StateArchive& archive) override;

 private:
  uint64_t Slot(uint32_t pos) const { return pos % capacity_; }

  uint32_t window_;
  uint32_t capacity_;  // positions the ring holds
  uint32_t end_ = 0;   // one past the last written position
  std::vector<uint64_t> widths_;
  std::vector<std::vector<float>> rows_;  // [kind][capacity * width]
};

// The fixed-size state of a recurrent mixer (KDA): float32 parts whose size
// does not depend on the context, plus one checkpoint copy of them, so that
// chat can rewind to the end of the last prompt without recomputing the
// conversation (docs/ENGINE.md#state). Both are allocated at construction.
class RecurrentState : public LayerState {
 public:
  // `sizes`: floats of each part.
  explicit RecurrentState(std::vector<uint64_t> sizes);

  std::span<float> Part(size_t kind) { return parts_[kind]; }
  // Marks the token at `pos` folded in.
  void Advanced(uint32_t pos) { end_ = pos + 1; }

  uint64_t bytes() const override;
  // Returns `position` when nothing is to be forgotten; else restores the
  // checkpoint when it lies at or before `position`, else starts over at 0.
  uint32_t Rewind(uint32_t position) override;
  void Checkpoint() override;
  void Archive(StateArchive& archive) override;

 private:
  std::vector<std::vector<float>> parts_, saved_;
  uint32_t end_ = 0;                 // tokens folded in
  std::optional<uint32_t> saved_at_;  // the checkpoint's position
};

}  // namespace warp::computed
