#include "computed/engine/mixers/gqa_attention.h"

#include <cmath>

#include "common/compute/linear.h"
#include "computed/engine/mixers/dot.h"

namespace warp::computed {
namespace {

constexpr size_t kKeys = 0, kValues = 1;

void AddBias(float* x, std::span<const float> bias) {
  for (size_t i = 0; i < bias.size(); ++i) x[i] += bias[i];
}

}  // namespace

GqaAttention::GqaAttention(const ModelConfig& c, const MixerPlan& plan, const GqaParams& params,
                           const TrunkWeights& w, uint32_t context, ComputeContext& compute)
    : c_(c),
      compute_(compute),
      rope_(plan.rope),
      scale_(plan.softmax_scale),
      kv_dim_(uint64_t{c.num_kv_heads} * c.head_dim),
      cache_(context, params.sliding_window, {kv_dim_, kv_dim_}) {
  const GqaTensors t = GqaTensors::Of(c, plan.prefix, params);
  q_ = w.Matrix(t.q);
  k_ = w.Matrix(t.k);
  v_ = w.Matrix(t.v);
  o_ = w.Matrix(t.o);
  q_bias_ = w.Vector(t.q_bias);
  k_bias_ = w.Vector(t.k_bias);
  v_bias_ = w.Vector(t.v_bias);
  o_bias_ = w.Vector(t.o_bias);
  q_norm_ = w.Vector(t.q_norm);
  k_norm_ = w.Vector(t.k_norm);
  sinks_ = w.Vector(t.sinks);
}

void GqaAttention::Prepare(float* head, std::span<const float> norm, uint32_t pos) const {
  if (!norm.empty()) RmsNorm({head, c_.head_dim}, norm, c_.rms_norm_eps, {head, c_.head_dim});
  rope_.Apply({head, rope_.dim()}, pos);
}

void GqaAttention::Attend(const float* q, uint32_t pos, float* attn) const {
  const uint32_t heads = c_.num_heads, hd = c_.head_dim;
  const uint32_t first = cache_.FirstVisible(pos);
  const uint32_t visible = pos + 1 - first;
  // Heads apart, each whole on one thread (the same bits for any split); a
  // short context stays on the calling thread (kParallelWork: chosen, not measured).
  const auto attend_heads = [&](size_t head_begin, size_t head_end) {
    // The sink joins the softmax as one more logit, then its weight is dropped.
    std::vector<float> scores(visible + (sinks_.empty() ? 0 : 1));
    for (size_t h = head_begin; h < head_end; ++h) {
      const float* qh = q + h * hd;
      const uint64_t kv_offset = h / (heads / c_.num_kv_heads) * hd;
      for (uint32_t s = first; s <= pos; ++s) {
        scores[s - first] = Dot(qh, cache_.Row(kKeys, s) + kv_offset, hd) * scale_;
      }
      if (!sinks_.empty()) scores[visible] = sinks_[h];
      Softmax(scores);
      AddWeightedRows(
          std::span<const float>(scores).first(visible),
          [&](size_t k) {
            return cache_.Row(kValues, first + static_cast<uint32_t>(k)) + kv_offset;
          },
          hd, attn + h * hd);
    }
  };
  if (uint64_t{visible} * hd * heads < kParallelWork) {
    attend_heads(0, heads);
  } else {
    compute_.ParallelFor(heads, 1, attend_heads);
  }
}

void GqaAttention::Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                           std::span<float> out) {
  const uint32_t heads = c_.num_heads, hd = c_.head_dim;
  const uint64_t q_dim = uint64_t{heads} * hd;
  std::vector<float> q(n * q_dim), k(n * kv_dim_), v(n * kv_dim_);
  Linear(compute_, q_, x.data(), n, q.data());
  Linear(compute_, k_, x.data(), n, k.data());
  Linear(compute_, v_, x.data(), n, v.data());
  std::vector<float> attn(n * q_dim, 0.0f);
  // Token by token: write its K/V, then attend, so a sliding ring never
  // overwrites a key an earlier token of the chunk still needs.
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = first_pos + t;
    float* qt = &q[t * q_dim];
    float* kt = &k[t * kv_dim_];
    float* vt = &v[t * kv_dim_];
    AddBias(qt, q_bias_);
    AddBias(kt, k_bias_);
    AddBias(vt, v_bias_);
    for (uint32_t h = 0; h < heads; ++h) Prepare(qt + uint64_t{h} * hd, q_norm_, pos);
    for (uint32_t h = 0; h < c_.num_kv_heads; ++h) Prepare(kt + uint64_t{h} * hd, k_norm_, pos);
    std::copy_n(kt, kv_dim_, cache_.Row(kKeys, pos));
    std::copy_n(vt, kv_dim_, cache_.Row(kValues, pos));
    cache_.Written(pos);
    Attend(qt, pos, &attn[t * q_dim]);
  }
  TellBeforeOutput(attn, n);
  Linear(compute_, o_, attn.data(), n, out.data());
  for (uint32_t t = 0; t < n; ++t) AddBias(&out[uint64_t{t} * c_.hidden_size], o_bias_);
}

}  // namespace warp::computed
