#include "computed/engine/attention.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "computed/engine/linear.h"
#include "computed/kernels/matmul.h"

namespace warp::computed {
namespace {

float Dot(const float* a, const float* b, size_t n) {
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// q_a_layernorm and kv_a_layernorm are built with DeepseekV3RMSNorm's default
// eps in the Hugging Face code, not with config.rms_norm_eps.
constexpr float kLatentNormEps = 1e-6f;

// Multi-head latent attention (DeepSeek V3 / Kimi K2).
class MlaAttention : public Attention {
 public:
  MlaAttention(const ModelConfig& c, const TrunkWeights& w, const std::string& p,
               uint32_t max_positions, ThreadPool& pool)
      : c_(c), pool_(pool), rope_(c, c.qk_rope_head_dim) {
    if (c.q_lora_rank > 0) {
      q_a_ = w.Matrix(p + "q_a_proj.weight");
      q_a_norm_ = w.Vector(p + "q_a_layernorm.weight");
      q_b_ = w.Matrix(p + "q_b_proj.weight");
    } else {
      q_b_ = w.Matrix(p + "q_proj.weight");
    }
    kv_a_ = w.Matrix(p + "kv_a_proj_with_mqa.weight");
    kv_a_norm_ = w.Vector(p + "kv_a_layernorm.weight");
    kv_b_ = w.Matrix(p + "kv_b_proj.weight");
    o_ = w.Matrix(p + "o_proj.weight");
    latent_.resize(uint64_t{max_positions} * c.kv_lora_rank);
    k_rope_.resize(uint64_t{max_positions} * c.qk_rope_head_dim);
    scale_ = MlaSoftmaxScaleFactor(c) /
             std::sqrt(static_cast<float>(c.qk_nope_head_dim + c.qk_rope_head_dim));
  }

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override {
    const uint32_t heads = c_.num_heads, nope = c_.qk_nope_head_dim, rope = c_.qk_rope_head_dim;
    const uint32_t lora = c_.kv_lora_rank, v_dim = c_.v_head_dim;
    const uint32_t q_head = nope + rope;
    std::vector<float> q(uint64_t{n} * heads * q_head);
    if (c_.q_lora_rank > 0) {
      std::vector<float> q_a(uint64_t{n} * c_.q_lora_rank);
      Linear(pool_, q_a_, x.data(), n, q_a.data());
      for (uint32_t t = 0; t < n; ++t) {
        std::span<float> row(q_a.data() + uint64_t{t} * c_.q_lora_rank, c_.q_lora_rank);
        RmsNorm(row, q_a_norm_, kLatentNormEps, row);
      }
      Linear(pool_, q_b_, q_a.data(), n, q.data());
    } else {
      Linear(pool_, q_b_, x.data(), n, q.data());
    }
    std::vector<float> kv_a(uint64_t{n} * (lora + rope));
    Linear(pool_, kv_a_, x.data(), n, kv_a.data());
    for (uint32_t t = 0; t < n; ++t) {  // fill the cache first: later tokens see earlier ones
      const uint32_t pos = first_pos + t;
      const float* row = kv_a.data() + uint64_t{t} * (lora + rope);
      RmsNorm({row, lora}, kv_a_norm_, kLatentNormEps, {&latent_[uint64_t{pos} * lora], lora});
      std::copy_n(row + lora, rope, &k_rope_[uint64_t{pos} * rope]);
      rope_.Apply({&k_rope_[uint64_t{pos} * rope], rope}, pos);
    }
    std::vector<float> attn(uint64_t{n} * heads * v_dim);
    std::vector<float> kb_row(lora), q_lat(lora), ctx(lora), kv_b_out(kv_b_.rows), scores;
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t pos = first_pos + t;
      scores.resize(pos + 1);
      for (uint32_t h = 0; h < heads; ++h) {
        float* qh = q.data() + (uint64_t{t} * heads + h) * q_head;
        rope_.Apply({qh + nope, rope}, pos);
        // Absorb kv_b's key part: q_lat = W_kb(h)^T q_nope.
        std::fill(q_lat.begin(), q_lat.end(), 0.0f);
        for (uint32_t i = 0; i < nope; ++i) {
          kernels::DequantizeRow(kv_b_, uint64_t{h} * (nope + v_dim) + i, kb_row);
          for (uint32_t j = 0; j < lora; ++j) q_lat[j] += qh[i] * kb_row[j];
        }
        for (uint32_t s = 0; s <= pos; ++s) {
          scores[s] = (Dot(q_lat.data(), &latent_[uint64_t{s} * lora], lora) +
                       Dot(qh + nope, &k_rope_[uint64_t{s} * rope], rope)) *
                      scale_;
        }
        Softmax(scores);
        std::fill(ctx.begin(), ctx.end(), 0.0f);
        for (uint32_t s = 0; s <= pos; ++s) {
          const float* latent = &latent_[uint64_t{s} * lora];
          for (uint32_t j = 0; j < lora; ++j) ctx[j] += scores[s] * latent[j];
        }
        // Absorb kv_b's value part: o_h = W_vb(h) ctx.
        const uint64_t v_row = uint64_t{h} * (nope + v_dim) + nope;
        kernels::MatMulRows(kv_b_, ctx, 1, v_row, v_row + v_dim, kv_b_out, kv_b_.rows);
        std::copy_n(&kv_b_out[v_row], v_dim, attn.data() + (uint64_t{t} * heads + h) * v_dim);
      }
    }
    Linear(pool_, o_, attn.data(), n, out.data());
  }

 private:
  const ModelConfig& c_;
  ThreadPool& pool_;
  Rope rope_;
  kernels::MatrixView q_a_, q_b_, kv_a_, kv_b_, o_;
  std::span<const float> q_a_norm_, kv_a_norm_;
  float scale_;
  std::vector<float> latent_;  // [max_positions][kv_lora_rank], after kv_a_layernorm
  std::vector<float> k_rope_;  // [max_positions][qk_rope_head_dim], rotated
};

// Grouped-query attention (qwen3_moe, glm4_moe, mixtral).
class GqaAttention : public Attention {
 public:
  GqaAttention(const ModelConfig& c, const TrunkWeights& w, const std::string& p,
               uint32_t max_positions, ThreadPool& pool)
      : c_(c),
        pool_(pool),
        rope_(c, static_cast<uint32_t>(c.head_dim * c.partial_rotary_factor) / 2 * 2) {
    q_ = w.Matrix(p + "q_proj.weight");
    k_ = w.Matrix(p + "k_proj.weight");
    v_ = w.Matrix(p + "v_proj.weight");
    o_ = w.Matrix(p + "o_proj.weight");
    if (c.attention_bias) {
      q_bias_ = w.Vector(p + "q_proj.bias");
      k_bias_ = w.Vector(p + "k_proj.bias");
      v_bias_ = w.Vector(p + "v_proj.bias");
    }
    if (c.qk_norm) {
      q_norm_ = w.Vector(p + "q_norm.weight");
      k_norm_ = w.Vector(p + "k_norm.weight");
    }
    kv_dim_ = uint64_t{c.num_kv_heads} * c.head_dim;
    k_cache_.resize(max_positions * kv_dim_);
    v_cache_.resize(max_positions * kv_dim_);
    scale_ = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  }

  void Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
               std::span<float> out) override {
    const uint32_t heads = c_.num_heads, hd = c_.head_dim;
    const uint64_t q_dim = uint64_t{heads} * hd;
    std::vector<float> q(n * q_dim), k(n * kv_dim_), v(n * kv_dim_);
    Linear(pool_, q_, x.data(), n, q.data());
    Linear(pool_, k_, x.data(), n, k.data());
    Linear(pool_, v_, x.data(), n, v.data());
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t pos = first_pos + t;
      AddBias(&q[t * q_dim], q_bias_);
      AddBias(&k[t * kv_dim_], k_bias_);
      AddBias(&v[t * kv_dim_], v_bias_);
      for (uint32_t h = 0; h < heads; ++h) Prepare(&q[t * q_dim + h * hd], q_norm_, pos);
      for (uint32_t h = 0; h < c_.num_kv_heads; ++h)
        Prepare(&k[t * kv_dim_ + h * hd], k_norm_, pos);
      std::copy_n(&k[t * kv_dim_], kv_dim_, &k_cache_[pos * kv_dim_]);
      std::copy_n(&v[t * kv_dim_], kv_dim_, &v_cache_[pos * kv_dim_]);
    }
    const uint32_t group = heads / c_.num_kv_heads;
    std::vector<float> attn(n * q_dim, 0.0f), scores;
    for (uint32_t t = 0; t < n; ++t) {
      const uint32_t pos = first_pos + t;
      scores.resize(pos + 1);
      for (uint32_t h = 0; h < heads; ++h) {
        const float* qh = &q[t * q_dim + h * hd];
        const uint64_t kv_offset = uint64_t{h / group} * hd;
        for (uint32_t s = 0; s <= pos; ++s) {
          scores[s] = Dot(qh, &k_cache_[s * kv_dim_ + kv_offset], hd) * scale_;
        }
        Softmax(scores);
        float* o_h = &attn[t * q_dim + h * hd];
        for (uint32_t s = 0; s <= pos; ++s) {
          const float* vs = &v_cache_[s * kv_dim_ + kv_offset];
          for (uint32_t i = 0; i < hd; ++i) o_h[i] += scores[s] * vs[i];
        }
      }
    }
    Linear(pool_, o_, attn.data(), n, out.data());
  }

 private:
  static void AddBias(float* x, std::span<const float> bias) {
    for (size_t i = 0; i < bias.size(); ++i) x[i] += bias[i];
  }

  // Per-head RMSNorm (when the model has one), then rope on the rotary part.
  void Prepare(float* head, std::span<const float> norm, uint32_t pos) const {
    if (!norm.empty()) RmsNorm({head, c_.head_dim}, norm, c_.rms_norm_eps, {head, c_.head_dim});
    rope_.Apply({head, rope_.dim()}, pos);
  }

  const ModelConfig& c_;
  ThreadPool& pool_;
  Rope rope_;
  kernels::MatrixView q_, k_, v_, o_;
  std::span<const float> q_bias_, k_bias_, v_bias_, q_norm_, k_norm_;
  uint64_t kv_dim_;
  float scale_;
  std::vector<float> k_cache_;  // [max_positions][kv_heads * head_dim], normed and rotated
  std::vector<float> v_cache_;  // [max_positions][kv_heads * head_dim]
};

}  // namespace

std::unique_ptr<Attention> Attention::Create(const ModelConfig& config, const TrunkWeights& weights,
                                             uint32_t layer, uint32_t max_positions,
                                             ThreadPool& pool) {
  const std::string prefix = absl::StrCat("model.layers.", layer, ".self_attn.");
  if (config.arch == Architecture::kDeepseekV3) {
    return std::make_unique<MlaAttention>(config, weights, prefix, max_positions, pool);
  }
  return std::make_unique<GqaAttention>(config, weights, prefix, max_positions, pool);
}

}  // namespace warp::computed
