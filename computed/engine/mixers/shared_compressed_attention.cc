#include "computed/engine/mixers/shared_compressed_attention.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/compute/linear.h"
#include "computed/engine/mixers/cache_rounding.h"
#include "computed/engine/mixers/dot.h"
#include "computed/engine/mixers/grouped_output.h"
#include "computed/engine/mixers/window_attention.h"

namespace warp::computed {
namespace {

// The mixer of layer `layer` among `earlier`, as the kind that publishes what
// a later layer reads. REQUIRES: the plan made it one (families/deepseek_v41).
const SharedCompressedAttention* Source(std::span<const std::unique_ptr<TokenMixer>> earlier,
                                        int32_t layer) {
  return dynamic_cast<const SharedCompressedAttention*>(earlier[layer].get());
}

// The top `k` of `scores` over `allowed` indices, ties to the lower index,
// in increasing index order.
std::vector<uint32_t> TopK(const std::vector<float>& scores, std::vector<uint32_t> allowed,
                           uint32_t k) {
  k = std::min<uint32_t>(k, allowed.size());
  std::partial_sort(allowed.begin(), allowed.begin() + k, allowed.end(),
                    [&](uint32_t a, uint32_t b) {
                      return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
                    });
  allowed.resize(k);
  std::sort(allowed.begin(), allowed.end());
  return allowed;
}

}  // namespace

uint64_t SharedCompressedState::bytes() const {
  return window_.bytes() + (cache_ != nullptr ? cache_->bytes() : 0);
}

uint32_t SharedCompressedState::Rewind(uint32_t position) {
  for (;;) {  // until both parts can continue from the same position
    uint32_t reached = window_.Rewind(position);
    if (cache_ != nullptr) reached = std::min(reached, cache_->Rewind(position));
    if (reached == position) return position;
    position = reached;
  }
}

void SharedCompressedState::Checkpoint() {
  if (cache_ != nullptr) cache_->Checkpoint();
}

void SharedCompressedState::Archive(StateArchive& archive) {
  window_.Archive(archive);
  if (cache_ != nullptr) cache_->Archive(archive);
}

SharedCompressedAttention::SharedCompressedAttention(
    const ModelConfig& c, const MixerPlan& plan, const SharedCompressedMqaParams& params,
    const TrunkWeights& w, uint32_t context, ComputeContext& compute,
    std::span<const std::unique_ptr<TokenMixer>> earlier)
    : c_(c),
      compute_(compute),
      params_(params),
      rope_(plan.rope),
      state_(context, params.sliding_window, c.head_dim) {
  const SharedCompressedMqaTensors t = SharedCompressedMqaTensors::Of(c, plan.prefix, params);
  const CompressedMqaTensors& a = t.attention;
  q_a_ = w.Matrix(a.q_a);
  q_norm_ = w.Vector(a.q_norm);
  q_b_ = w.Matrix(a.q_b);
  kv_ = w.Matrix(a.kv);
  kv_norm_ = w.Vector(a.kv_norm);
  o_a_ = w.Matrix(a.o_a);
  o_b_ = w.Matrix(a.o_b);
  sinks_ = w.Vector(a.sinks);
  if (params.compress_rate == 0) return;
  if (params.owns_compressor()) {
    cache_ = std::make_unique<SharedKvCache>(c, w, t, params.compress_rate, rope_, context);
    state_.set_cache(cache_.get());
    source_ = cache_.get();
  } else {
    source_ = Source(earlier, params.kv_source)->cache();
  }
  if (params.runs_indexer()) {
    index_q_ = w.Matrix(t.indexer->q_b);
    index_weights_ = w.Matrix(t.indexer->weights_proj);
  } else {
    index_source_ = Source(earlier, params.index_source);
  }
  if (params.uses_candidates()) candidate_source_ = Source(earlier, params.candidate_source);
}

void SharedCompressedAttention::Choose(uint32_t t, uint32_t pos, const float* iq,
                                       const float* w) {
  const CompressedAttention& shape = c_.compressed;
  const SharedCompression& shared = c_.shared_compression;
  const uint32_t heads = shape.index_heads, dim = shape.index_head_dim;
  const uint32_t visible = source_->VisibleAt(pos);
  const float score_scale = 1.0f / std::sqrt(static_cast<float>(dim));
  std::vector<float> scores(visible, 0.0f);
  for (uint32_t s = 0; s < visible; ++s) {
    for (uint32_t h = 0; h < heads; ++h) {
      const float qk = Dot(iq + uint64_t{h} * dim, source_->Key(s), dim);
      scores[s] += std::max(qk, 0.0f) * score_scale * w[h];
    }
  }
  std::vector<uint32_t> allowed(visible);
  std::iota(allowed.begin(), allowed.end(), 0u);
  const uint32_t block = shared.candidate_block_size;
  if (params_.is_candidate_source()) {
    // Level one: the blocks of best single entry, the newest (partly filled) always kept.
    const uint32_t blocks = (visible + block - 1) / block;
    std::vector<float> best(blocks, -INFINITY);
    for (uint32_t s = 0; s < visible; ++s) best[s / block] = std::max(best[s / block], scores[s]);
    if (blocks > 0) best[blocks - 1] = INFINITY;
    std::vector<uint32_t> all(blocks);
    std::iota(all.begin(), all.end(), 0u);
    std::vector<bool>& kept = candidates_[t];
    kept.assign(blocks, false);
    for (uint32_t b : TopK(best, all, shared.candidate_topk_blocks)) kept[b] = true;
  } else if (candidate_source_ != nullptr) {
    const std::vector<bool>& kept = candidate_source_->candidate_blocks()[t];
    std::erase_if(allowed, [&](uint32_t s) { return s / block >= kept.size() || !kept[s / block]; });
  }
  chosen_[t] = TopK(scores, std::move(allowed), shape.index_topk);
}

void SharedCompressedAttention::Attend(const float* q, uint32_t h, uint32_t pos,
                                       const std::vector<uint32_t>& entries, float* o) {
  AttendWindowAndEntries(
      q, c_.head_dim, state_.window(), pos, entries,
      [&](uint32_t entry) { return source_->Entry(entry); }, sinks_[h], o);
}

void SharedCompressedAttention::Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                                        std::span<float> out) {
  const uint32_t heads = c_.num_heads, dim = c_.head_dim, rope = rope_.dim();
  const uint32_t q_lora = c_.q_lora_rank;
  const float eps = c_.rms_norm_eps;
  QueriesAndKv projected = ProjectQueriesAndKv(compute_, q_a_, q_norm_, q_b_, kv_, x, n, q_lora,
                                               uint64_t{heads} * dim, dim, eps);
  std::vector<float>& q_res = projected.latent;
  std::vector<float>& q = projected.q;
  std::vector<float>& kv = projected.kv;
  std::vector<float> comp_kv, comp_gate;
  if (cache_) {
    comp_kv.resize(uint64_t{n} * dim);
    Linear(compute_, cache_->kv_proj(), x.data(), n, comp_kv.data());
    if (cache_->rate() > 1) {
      comp_gate.resize(uint64_t{n} * dim);
      Linear(compute_, cache_->gate_proj(), x.data(), n, comp_gate.data());
    }
  }
  const uint32_t index_heads = c_.compressed.index_heads, index_dim = c_.compressed.index_head_dim;
  std::vector<float> iq, iw;
  if (params_.runs_indexer()) {
    iq.resize(uint64_t{n} * index_heads * index_dim);
    iw.resize(uint64_t{n} * index_heads);
    Linear(compute_, index_q_, q_res.data(), n, iq.data());
    Linear(compute_, index_weights_, x.data(), n, iw.data());
    const float weight_scale = 1.0f / std::sqrt(static_cast<float>(index_heads));
    for (float& v : iw) v *= weight_scale;
    chosen_.assign(n, {});
    if (params_.is_candidate_source()) candidates_.assign(n, {});
  }
  std::vector<float> attn(uint64_t{n} * heads * dim);
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = first_pos + t;
    float* k = state_.window().Row(0, pos);
    RmsNorm({&kv[uint64_t{t} * dim], dim}, kv_norm_, eps, {k, dim});
    rope_.Apply({k + dim - rope, rope}, pos);
    RoundTripFp8({k, dim}, 32);
    state_.window().Written(pos);
    if (cache_) {
      cache_->Add(&comp_kv[uint64_t{t} * dim],
                  comp_gate.empty() ? nullptr : &comp_gate[uint64_t{t} * dim]);
    }
    if (params_.runs_indexer()) {
      float* query = &iq[uint64_t{t} * index_heads * index_dim];
      for (uint32_t h = 0; h < index_heads; ++h) {
        float* head = query + uint64_t{h} * index_dim;
        rope_.Apply({head + index_dim - rope, rope}, pos);
        RoundTripFp4Pow2Scale({head, index_dim}, 32);
      }
      Choose(t, pos, query, &iw[uint64_t{t} * index_heads]);
    }
    static const std::vector<uint32_t> kNoEntries;
    const std::vector<uint32_t>& entries = params_.runs_indexer() ? chosen_[t]
                                           : index_source_ != nullptr ? index_source_->chosen()[t]
                                                                      : kNoEntries;
    compute_.ParallelFor(heads, 1, [&](size_t begin, size_t end) {
      for (size_t h = begin; h < end; ++h) {
        float* qh = &q[(uint64_t{t} * heads + h) * dim];
        rope_.Apply({qh + dim - rope, rope}, pos);
        float* o = &attn[(uint64_t{t} * heads + h) * dim];
        Attend(qh, static_cast<uint32_t>(h), pos, entries, o);
        rope_.Unapply({o + dim - rope, rope}, pos);
      }
    });
  }
  GroupedOutput(compute_, o_a_, o_b_, c_.compressed.o_groups, c_.compressed.o_lora_rank, attn, n,
                out);
}

}  // namespace warp::computed
