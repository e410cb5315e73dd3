#include "computed/engine/mixers/mla_attention.h"

#include <cmath>
#include <numeric>

#include "common/compute/linear.h"
#include "common/kernels/matmul.h"
#include "computed/engine/mixers/dot.h"

namespace warp::computed {
namespace {

constexpr size_t kLatent = 0, kRopeKey = 1, kIndexKey = 2;  // kIndexKey + 1: index gates

}  // namespace

MlaAttention::MlaAttention(const ModelConfig& c, const MixerPlan& plan, const MlaParams& params,
                           const TrunkWeights& w, uint32_t context, ComputeContext& compute)
    : c_(c),
      compute_(compute),
      rope_(plan.rope),
      scale_(plan.softmax_scale),
      latent_eps_(params.latent_norm_eps),
      cache_(context, 0,
             params.dsa_indexer ? std::vector<uint64_t>{c.kv_lora_rank, c.qk_rope_head_dim,
                                                      c.dsa.index_head_dim, c.dsa.index_head_dim}
                              : std::vector<uint64_t>{c.kv_lora_rank, c.qk_rope_head_dim}) {
  const MlaTensors t = MlaTensors::Of(c, plan.prefix, params);
  q_a_ = w.Matrix(t.q_a);
  q_a_norm_ = w.Vector(t.q_a_norm);
  q_b_ = w.Matrix(t.q_b);
  kv_a_ = w.Matrix(t.kv_a);
  kv_a_norm_ = w.Vector(t.kv_a_norm);
  if (t.kv_b.present()) {
    key_b_ = value_b_ = w.Matrix(t.kv_b);
  } else {
    key_b_ = w.Matrix(t.k_b);
    value_b_ = w.Matrix(t.v_b);
    key_b_transposed_ = true;
  }
  o_ = w.Matrix(t.o);
  gate_ = w.Matrix(t.gate);
  if (t.indexer) indexer_ = std::make_unique<PooledIndexer>(c, w, *t.indexer, compute);
}

MlaAttention::HeadScratch::HeadScratch(const MlaAttention& mla, uint32_t n)
    : key_b(uint64_t{mla.c_.qk_nope_head_dim} * mla.c_.kv_lora_rank),
      row(mla.key_b_transposed_ ? mla.c_.qk_nope_head_dim : 0),
      q_latent(mla.c_.kv_lora_rank),
      context(uint64_t{std::min(n, kValueBatch)} * mla.c_.kv_lora_rank),
      value_out(uint64_t{std::min(n, kValueBatch)} * mla.value_b_.rows) {}

void MlaAttention::AttendHead(uint32_t h, std::span<float> q, uint32_t n, uint32_t first_pos,
                              std::span<const std::vector<uint32_t>> keys, HeadScratch& scratch,
                              std::span<float> attn) const {
  const uint32_t heads = c_.num_heads, nope = c_.qk_nope_head_dim, rope = c_.qk_rope_head_dim;
  const uint32_t lora = c_.kv_lora_rank, v_dim = c_.v_head_dim, q_head = nope + rope;
  // W_kb(h) as key_b[i][j] (nope key dim i, latent dim j), from either layout:
  // kv_b_proj holds per head nope key rows, then v_dim value rows; k_b_proj
  // holds row h * lora + j over the nope dims.
  float* key_b = scratch.key_b.data();
  if (key_b_transposed_) {
    for (uint32_t j = 0; j < lora; ++j) {
      kernels::DequantizeRow(key_b_, uint64_t{h} * lora + j, scratch.row);
      for (uint32_t i = 0; i < nope; ++i) key_b[uint64_t{i} * lora + j] = scratch.row[i];
    }
  } else {
    for (uint32_t i = 0; i < nope; ++i) {
      kernels::DequantizeRow(key_b_, uint64_t{h} * (nope + v_dim) + i,
                             {key_b + uint64_t{i} * lora, lora});
    }
  }
  const uint64_t value_stride = key_b_transposed_ ? v_dim : nope + v_dim;
  const uint64_t v_row = uint64_t{h} * value_stride + (key_b_transposed_ ? 0 : nope);
  std::vector<float>& scores = scratch.scores;
  for (uint32_t t0 = 0; t0 < n; t0 += kValueBatch) {
    const uint32_t batch = std::min(kValueBatch, n - t0);
    for (uint32_t b = 0; b < batch; ++b) {
      const uint32_t t = t0 + b;
      float* qh = q.data() + (uint64_t{t} * heads + h) * q_head;
      rope_.Apply({qh + nope, rope}, first_pos + t);
      // Absorb the key part: q_latent = W_kb(h)^T q_nope, each q_latent[j]
      // summed over i in order.
      std::fill(scratch.q_latent.begin(), scratch.q_latent.end(), 0.0f);
      for (uint32_t i = 0; i < nope; ++i) {
        const float* key_row = key_b + uint64_t{i} * lora;
        for (uint32_t j = 0; j < lora; ++j) scratch.q_latent[j] += qh[i] * key_row[j];
      }
      scores.resize(keys[t].size());
      for (size_t k = 0; k < keys[t].size(); ++k) {
        scores[k] = (Dot(scratch.q_latent.data(), cache_.Row(kLatent, keys[t][k]), lora) +
                     Dot(qh + nope, cache_.Row(kRopeKey, keys[t][k]), rope)) *
                    scale_;
      }
      Softmax(scores);
      float* context = scratch.context.data() + uint64_t{b} * lora;
      std::fill(context, context + lora, 0.0f);
      AddWeightedRows(
          scores, [&](size_t k) { return cache_.Row(kLatent, keys[t][k]); }, lora, context);
    }
    // Absorb the value part: o_h = W_vb(h) context, the batch's tokens at once.
    kernels::MatMulRows(value_b_, scratch.context, batch, v_row, v_row + v_dim, scratch.value_out,
                        value_b_.rows);
    for (uint32_t b = 0; b < batch; ++b) {
      std::copy_n(&scratch.value_out[b * value_b_.rows + v_row], v_dim,
                  attn.data() + (uint64_t{t0 + b} * heads + h) * v_dim);
    }
  }
}

void MlaAttention::Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                           std::span<float> out) {
  const uint32_t heads = c_.num_heads, nope = c_.qk_nope_head_dim, rope = c_.qk_rope_head_dim;
  const uint32_t lora = c_.kv_lora_rank, v_dim = c_.v_head_dim;
  const uint32_t q_head = nope + rope;
  std::vector<float> q(uint64_t{n} * heads * q_head);
  std::vector<float> q_a;  // the q-LoRA latent, normalized
  if (c_.q_lora_rank > 0) {
    q_a.resize(uint64_t{n} * c_.q_lora_rank);
    Linear(compute_, q_a_, x.data(), n, q_a.data());
    for (uint32_t t = 0; t < n; ++t) {
      std::span<float> row(q_a.data() + uint64_t{t} * c_.q_lora_rank, c_.q_lora_rank);
      RmsNorm(row, q_a_norm_, latent_eps_, row);
    }
    Linear(compute_, q_b_, q_a.data(), n, q.data());
  } else {
    Linear(compute_, q_b_, x.data(), n, q.data());
  }
  if (indexer_) indexer_->Project(x, q_a, n);
  std::vector<float> kv_a(uint64_t{n} * (lora + rope));
  Linear(compute_, kv_a_, x.data(), n, kv_a.data());
  for (uint32_t t = 0; t < n; ++t) {  // fill the cache first: later tokens see earlier ones
    const uint32_t pos = first_pos + t;
    const float* row = kv_a.data() + uint64_t{t} * (lora + rope);
    RmsNorm({row, lora}, kv_a_norm_, latent_eps_, {cache_.Row(kLatent, pos), lora});
    float* k_rope = cache_.Row(kRopeKey, pos);
    std::copy_n(row + lora, rope, k_rope);
    rope_.Apply({k_rope, rope}, pos);
    cache_.Written(pos);
  }
  // The positions each token attends to: all before it, or the DSA indexer's
  // choice (which writes the token's index rows first).
  std::vector<std::vector<uint32_t>> keys(n);
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = first_pos + t;
    if (indexer_) {
      keys[t] = indexer_->Select(t, pos, cache_, kIndexKey);
    } else {
      keys[t].resize(pos + 1);
      std::iota(keys[t].begin(), keys[t].end(), 0u);
    }
  }
  std::vector<float> attn(uint64_t{n} * heads * v_dim);
  // Heads apart, each whole on one thread (the same bits for any split): its
  // key weights dequantized once for the chunk's tokens.
  compute_.ParallelFor(heads, 1, [&](size_t head_begin, size_t head_end) {
    HeadScratch scratch(*this, n);
    for (size_t h = head_begin; h < head_end; ++h) {
      AttendHead(static_cast<uint32_t>(h), q, n, first_pos, keys, scratch, attn);
    }
  });
  if (gate_.rows > 0) {  // Kimi K3: the heads' output * sigmoid(g_proj x)
    std::vector<float> gate(attn.size());
    Linear(compute_, gate_, x.data(), n, gate.data());
    for (size_t i = 0; i < attn.size(); ++i) attn[i] /= 1.0f + std::exp(-gate[i]);
  }
  TellBeforeOutput(attn, n);
  Linear(compute_, o_, attn.data(), n, out.data());
}

}  // namespace warp::computed
