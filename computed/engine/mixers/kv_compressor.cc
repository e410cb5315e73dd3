#include "computed/engine/mixers/kv_compressor.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace warp::computed {

KvCompressor::KvCompressor(const TrunkWeights& w, const KvCompressorTensors& t, uint32_t dim,
                           uint32_t rate, bool overlap, float eps, const Rope& rope,
                           uint32_t context)
    : dim_(dim),
      rate_(rate),
      width_(overlap ? 2 * dim : dim),
      overlap_(overlap),
      eps_(eps),
      rope_(rope),
      kv_proj_(w.Matrix(t.kv)),
      gate_proj_(w.Matrix(t.gate)),
      ape_(w.Vector(t.ape)),
      norm_(w.Vector(t.norm)),
      entries_(uint64_t{context / rate} * dim) {
  open_.kv.assign(uint64_t{rate} * width_, 0.0f);
  open_.gate.assign(uint64_t{rate} * width_, 0.0f);
  if (overlap) {
    open_.prev_kv.assign(uint64_t{rate} * dim, 0.0f);
    open_.prev_gate.assign(uint64_t{rate} * dim, 0.0f);
  }
}

void KvCompressor::Add(const float* kv, const float* gate) {
  const uint64_t row = uint64_t{open_.filled} * width_;
  std::copy_n(kv, width_, &open_.kv[row]);
  for (uint32_t c = 0; c < width_; ++c) open_.gate[row + c] = gate[c] + ape_[row + c];
  ++end_;
  if (++open_.filled == rate_) Close();
}

void KvCompressor::Close() {
  float* entry = &entries_[uint64_t{count_} * dim_];
  const uint32_t slots = overlap_ ? 2 * rate_ : rate_;
  // Slot j: the previous window's first halves (j < rate, overlap only),
  // then this window's second halves (or, without overlap, its only half).
  const uint32_t own = overlap_ ? dim_ : 0;
  std::vector<float> logits(slots), values(slots);
  for (uint32_t c = 0; c < dim_; ++c) {
    uint32_t used = 0;
    if (overlap_ && open_.has_prev) {
      for (uint32_t j = 0; j < rate_; ++j, ++used) {
        logits[used] = open_.prev_gate[uint64_t{j} * dim_ + c];
        values[used] = open_.prev_kv[uint64_t{j} * dim_ + c];
      }
    }
    for (uint32_t j = 0; j < rate_; ++j, ++used) {
      logits[used] = open_.gate[uint64_t{j} * width_ + own + c];
      values[used] = open_.kv[uint64_t{j} * width_ + own + c];
    }
    std::span<float> weights(logits.data(), used);
    Softmax(weights);
    float sum = 0.0f;
    for (uint32_t j = 0; j < used; ++j) sum += weights[j] * values[j];
    entry[c] = sum;
  }
  RmsNorm({entry, dim_}, norm_, eps_, {entry, dim_});
  rope_.Apply({entry + dim_ - rope_.dim(), rope_.dim()}, count_ * rate_);
  if (overlap_) {  // this window's first halves join the next entry
    for (uint32_t j = 0; j < rate_; ++j) {
      std::copy_n(&open_.kv[uint64_t{j} * width_], dim_, &open_.prev_kv[uint64_t{j} * dim_]);
      std::copy_n(&open_.gate[uint64_t{j} * width_], dim_, &open_.prev_gate[uint64_t{j} * dim_]);
    }
    open_.has_prev = true;
  }
  open_.filled = 0;
  ++count_;
}

uint64_t KvCompressor::bytes() const {
  const uint64_t open =
      open_.kv.size() + open_.gate.size() + open_.prev_kv.size() + open_.prev_gate.size();
  return (entries_.size() + 2 * open) * sizeof(float);  // the open window twice: its checkpoint
}

uint32_t KvCompressor::Rewind(uint32_t position) {
  if (position >= end_) return end_;
  const uint32_t open_start = count_ * rate_;
  if (position >= open_start) {  // within the open window: drop its last rows
    open_.filled = position - open_start;
    end_ = position;
    return position;
  }
  if (saved_ && saved_->end <= position) {
    open_ = saved_->open;
    count_ = saved_->count;
    end_ = saved_->end;
    return end_;
  }
  saved_.reset();
  open_.filled = 0;
  open_.has_prev = false;
  count_ = 0;
  end_ = 0;
  return 0;
}

void KvCompressor::Archive(StateArchive& archive) {
  archive.Count(count_, entries_.size() / dim_, "compressed entries");
  archive.U32(end_);
  if (!archive.ok()) return;
  archive.Floats(std::span<float>(entries_.data(), uint64_t{count_} * dim_));
  // An open window has this compressor's sizes, whichever copy it is.
  auto open = [&](Open& o) {
    o.kv.resize(open_.kv.size());
    o.gate.resize(open_.gate.size());
    o.prev_kv.resize(open_.prev_kv.size());
    o.prev_gate.resize(open_.prev_gate.size());
    for (std::vector<float>* part : {&o.kv, &o.gate, &o.prev_kv, &o.prev_gate}) archive.Floats(*part);
    archive.Bool(o.has_prev);
    archive.Count(o.filled, rate_ - 1, "positions in an open window");
  };
  open(open_);
  archive.Optional(saved_, [&](Saved& saved) {
    open(saved.open);
    archive.Count(saved.count, count_, "entries at the checkpoint");
    archive.U32(saved.end);
  });
}

void KvCompressor::Checkpoint() { saved_ = Saved{.open = open_, .count = count_, .end = end_}; }

}  // namespace warp::computed
