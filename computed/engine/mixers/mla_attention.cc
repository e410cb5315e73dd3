#include "computed/engine/mixers/mla_attention.h"

#include <cmath>
#include <numeric>

#include "computed/engine/linear.h"
#include "computed/engine/mixers/dot.h"
#include "computed/kernels/matmul.h"

namespace warp::computed {
namespace {

constexpr size_t kLatent = 0, kRopeKey = 1, kIndexKey = 2;  // kIndexKey + 1: index gates

}  // namespace

MlaAttention::MlaAttention(const ModelConfig& c, const MixerPlan& plan, const TrunkWeights& w,
                           uint32_t context, ThreadPool& pool)
    : c_(c),
      pool_(pool),
      rope_(plan.rope),
      scale_(plan.softmax_scale),
      latent_eps_(plan.latent_norm_eps),
      cache_(context, 0,
             plan.dsa_indexer ? std::vector<uint64_t>{c.kv_lora_rank, c.qk_rope_head_dim,
                                                      c.dsa.index_head_dim, c.dsa.index_head_dim}
                              : std::vector<uint64_t>{c.kv_lora_rank, c.qk_rope_head_dim}) {
  const std::string& p = plan.prefix;
  if (c.q_lora_rank > 0) {
    q_a_ = w.Matrix(p + "q_a_proj.weight");
    q_a_norm_ = w.Vector(p + "q_a_layernorm.weight");
    q_b_ = w.Matrix(p + "q_b_proj.weight");
  } else {
    q_b_ = w.Matrix(p + "q_proj.weight");
  }
  kv_a_ = w.Matrix(p + "kv_a_proj_with_mqa.weight");
  kv_a_norm_ = w.Vector(p + "kv_a_layernorm.weight");
  if (c.kv_b_split) {
    key_b_ = w.Matrix(p + "k_b_proj.weight");
    value_b_ = w.Matrix(p + "v_b_proj.weight");
    key_b_transposed_ = true;
  } else {
    key_b_ = value_b_ = w.Matrix(p + "kv_b_proj.weight");
  }
  o_ = w.Matrix(p + "o_proj.weight");
  if (plan.output_gate) gate_ = w.Matrix(p + "g_proj.weight");
  if (plan.dsa_indexer) indexer_ = std::make_unique<PooledIndexer>(c, w, p + "indexer.", pool);
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
    Linear(pool_, q_a_, x.data(), n, q_a.data());
    for (uint32_t t = 0; t < n; ++t) {
      std::span<float> row(q_a.data() + uint64_t{t} * c_.q_lora_rank, c_.q_lora_rank);
      RmsNorm(row, q_a_norm_, latent_eps_, row);
    }
    Linear(pool_, q_b_, q_a.data(), n, q.data());
  } else {
    Linear(pool_, q_b_, x.data(), n, q.data());
  }
  if (indexer_) indexer_->Project(x, q_a, n);
  std::vector<float> kv_a(uint64_t{n} * (lora + rope));
  Linear(pool_, kv_a_, x.data(), n, kv_a.data());
  for (uint32_t t = 0; t < n; ++t) {  // fill the cache first: later tokens see earlier ones
    const uint32_t pos = first_pos + t;
    const float* row = kv_a.data() + uint64_t{t} * (lora + rope);
    RmsNorm({row, lora}, kv_a_norm_, latent_eps_, {cache_.Row(kLatent, pos), lora});
    float* k_rope = cache_.Row(kRopeKey, pos);
    std::copy_n(row + lora, rope, k_rope);
    rope_.Apply({k_rope, rope}, pos);
    cache_.Written(pos);
  }
  std::vector<float> attn(uint64_t{n} * heads * v_dim);
  std::vector<float> kb_row(key_b_transposed_ ? nope : lora), q_lat(lora), ctx(lora),
      value_out(value_b_.rows), scores;
  // kv_b_proj holds per head nope key rows, then v_dim value rows; v_b_proj only the latter.
  const uint64_t value_stride = key_b_transposed_ ? v_dim : nope + v_dim;
  const uint64_t value_first = key_b_transposed_ ? 0 : nope;
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = first_pos + t;
    // The positions this token attends to: all before it, or the DSA indexer's choice.
    std::vector<uint32_t> keys;
    if (indexer_) {
      keys = indexer_->Select(t, pos, cache_, kIndexKey);
    } else {
      keys.resize(pos + 1);
      std::iota(keys.begin(), keys.end(), 0u);
    }
    scores.resize(keys.size());
    for (uint32_t h = 0; h < heads; ++h) {
      float* qh = q.data() + (uint64_t{t} * heads + h) * q_head;
      rope_.Apply({qh + nope, rope}, pos);
      // Absorb kv_b's key part: q_lat = W_kb(h)^T q_nope, each q_lat[j] summed
      // over i in order from either layout (the same bits from both).
      if (key_b_transposed_) {
        for (uint32_t j = 0; j < lora; ++j) {
          kernels::DequantizeRow(key_b_, uint64_t{h} * lora + j, kb_row);
          float sum = 0.0f;
          for (uint32_t i = 0; i < nope; ++i) sum += qh[i] * kb_row[i];
          q_lat[j] = sum;
        }
      } else {
        std::fill(q_lat.begin(), q_lat.end(), 0.0f);
        for (uint32_t i = 0; i < nope; ++i) {
          kernels::DequantizeRow(key_b_, uint64_t{h} * (nope + v_dim) + i, kb_row);
          for (uint32_t j = 0; j < lora; ++j) q_lat[j] += qh[i] * kb_row[j];
        }
      }
      for (size_t i = 0; i < keys.size(); ++i) {
        scores[i] = (Dot(q_lat.data(), cache_.Row(kLatent, keys[i]), lora) +
                     Dot(qh + nope, cache_.Row(kRopeKey, keys[i]), rope)) *
                    scale_;
      }
      Softmax(scores);
      std::fill(ctx.begin(), ctx.end(), 0.0f);
      for (size_t i = 0; i < keys.size(); ++i) {
        const float* latent = cache_.Row(kLatent, keys[i]);
        for (uint32_t j = 0; j < lora; ++j) ctx[j] += scores[i] * latent[j];
      }
      // Absorb kv_b's value part: o_h = W_vb(h) ctx.
      const uint64_t v_row = uint64_t{h} * value_stride + value_first;
      kernels::MatMulRows(value_b_, ctx, 1, v_row, v_row + v_dim, value_out, value_b_.rows);
      std::copy_n(&value_out[v_row], v_dim, attn.data() + (uint64_t{t} * heads + h) * v_dim);
    }
  }
  if (gate_.rows > 0) {  // Kimi K3: the heads' output * sigmoid(g_proj x)
    std::vector<float> gate(attn.size());
    Linear(pool_, gate_, x.data(), n, gate.data());
    for (size_t i = 0; i < attn.size(); ++i) attn[i] /= 1.0f + std::exp(-gate[i]);
  }
  TellBeforeOutput(attn, n);
  Linear(pool_, o_, attn.data(), n, out.data());
}

}  // namespace warp::computed
