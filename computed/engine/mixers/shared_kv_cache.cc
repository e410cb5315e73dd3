#include "computed/engine/mixers/shared_kv_cache.h"

#include <algorithm>

#include "common/kernels/matmul.h"
#include "computed/engine/mixers/cache_rounding.h"

namespace warp::computed {

SharedKvCache::SharedKvCache(const ModelConfig& c, const TrunkWeights& w,
                             const SharedCompressedMqaTensors& t, uint32_t rate, const Rope& rope,
                             uint32_t context)
    : dim_(c.head_dim),
      key_dim_(c.compressed.index_head_dim),
      rate_(rate),
      eps_(c.rms_norm_eps),
      rope_(rope),
      kv_proj_(w.Matrix(t.compressor->kv)),
      gate_proj_(w.Matrix(t.compressor->gate)),
      key_proj_(w.Matrix(t.indexer->k)),
      norm_(w.Vector(t.compressor->norm)),
      key_norm_(w.Vector(t.indexer->k_norm)),
      entries_(uint64_t{context / rate} * dim_),
      keys_(uint64_t{context / rate} * key_dim_) {
  open_.kv.assign(uint64_t{rate} * dim_, 0.0f);
  if (rate > 1) open_.gate.assign(uint64_t{rate} * dim_, 0.0f);
}

void SharedKvCache::Add(const float* kv, const float* gate) {
  std::copy_n(kv, dim_, &open_.kv[uint64_t{open_.filled} * dim_]);
  if (rate_ > 1) std::copy_n(gate, dim_, &open_.gate[uint64_t{open_.filled} * dim_]);
  ++end_;
  if (++open_.filled == rate_) Close();
}

void SharedKvCache::Close() {
  std::vector<float> latent(dim_);
  if (rate_ == 1) {
    std::copy_n(open_.kv.data(), dim_, latent.data());
  } else {  // per channel, the softmax over the group's positions weighs their kv
    std::vector<float> weights(rate_);
    for (uint32_t ch = 0; ch < dim_; ++ch) {
      for (uint32_t j = 0; j < rate_; ++j) weights[j] = open_.gate[uint64_t{j} * dim_ + ch];
      Softmax(weights);
      float sum = 0.0f;
      for (uint32_t j = 0; j < rate_; ++j) sum += open_.kv[uint64_t{j} * dim_ + ch] * weights[j];
      latent[ch] = sum;
    }
  }
  RmsNorm(latent, norm_, eps_, latent);
  const uint32_t position = count_ * rate_, rope = rope_.dim();
  // The index key, from the latent before its rotation.
  float* key = &keys_[uint64_t{count_} * key_dim_];
  kernels::MatMulRows(key_proj_, latent, 1, 0, key_dim_, {key, key_dim_}, key_dim_);
  RmsNorm({key, key_dim_}, key_norm_, eps_, {key, key_dim_});
  rope_.Apply({key + key_dim_ - rope, rope}, position);
  RoundTripFp4Pow2Scale({key, key_dim_}, 32);
  float* entry = &entries_[uint64_t{count_} * dim_];
  std::copy(latent.begin(), latent.end(), entry);
  rope_.Apply({entry + dim_ - rope, rope}, position);
  RoundTripFp4E4m3Scale({entry, dim_}, 16);
  ++count_;
  open_.filled = 0;
}

uint64_t SharedKvCache::bytes() const {
  const uint64_t open = open_.kv.size() + open_.gate.size();
  return (entries_.size() + keys_.size() + 2 * open) * sizeof(float);
}

uint32_t SharedKvCache::Rewind(uint32_t position) {
  if (position >= end_) return end_;
  // A checkpoint past `position` would hold rows of positions about to be rewritten.
  if (saved_ && saved_->end > position) saved_.reset();
  const uint32_t group = position / rate_ * rate_;
  if (group >= count_ * rate_) {  // within the open group: its first rows stay
    open_.filled = position - group;
  } else if (position == group) {  // at a group boundary: the entries before it stay
    count_ = group / rate_;
    open_.filled = 0;
  } else if (saved_ && saved_->end > group) {  // the checkpoint, within that group
    open_ = saved_->open;
    count_ = saved_->count;
    end_ = saved_->end;
    return end_;
  } else {  // else to the start of the group `position` falls in
    count_ = group / rate_;
    open_.filled = 0;
    end_ = group;
    return end_;
  }
  end_ = position;
  return position;
}

void SharedKvCache::Checkpoint() { saved_ = Saved{open_, count_, end_}; }

void SharedKvCache::Archive(StateArchive& archive) {
  archive.Count(count_, entries_.size() / dim_, "pooled entries");
  archive.U32(end_);
  if (!archive.ok()) return;
  archive.Floats(std::span<float>(entries_.data(), uint64_t{count_} * dim_));
  archive.Floats(std::span<float>(keys_.data(), uint64_t{count_} * key_dim_));
  // An open group has this cache's sizes, whichever copy it is.
  auto open = [&](Open& o) {
    o.kv.resize(open_.kv.size());
    o.gate.resize(open_.gate.size());
    archive.Floats(o.kv);
    archive.Floats(o.gate);
    archive.Count(o.filled, rate_ - 1, "positions in an open group");
  };
  open(open_);
  archive.Optional(saved_, [&](Saved& saved) {
    open(saved.open);
    archive.Count(saved.count, count_, "entries at the checkpoint");
    archive.U32(saved.end);
  });
}

}  // namespace warp::computed
