#include "computed/engine/mixers/kda_attention.h"

#include <cmath>

#include "common/compute/linear.h"
#include "computed/engine/mixers/dot.h"
#include "computed/engine/ops.h"

namespace warp::computed {
namespace {

constexpr size_t kS = 0, kHistory = 1;

// fla's l2norm (use_qk_l2norm_in_kernel): x * rsqrt(sum(x^2) + 1e-6), a fixed
// eps independent of rms_norm_eps.
constexpr float kL2NormEps = 1e-6f;

float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float Silu(float x) { return x * Sigmoid(x); }
// torch.nn.functional.softplus with its default threshold 20.
float Softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

void L2Normalize(float* x, uint32_t n) {
  const float inv = 1.0f / std::sqrt(Dot(x, x, n) + kL2NormEps);
  for (uint32_t i = 0; i < n; ++i) x[i] *= inv;
}

}  // namespace

KdaAttention::KdaAttention(const ModelConfig& c, const MixerPlan& plan, const KdaParams& params,
                           const TrunkWeights& w, ComputeContext& compute)
    : c_(c),
      kda_(c.linear_attention),
      compute_(compute),
      width_(uint64_t{c.linear_attention.num_heads} * c.linear_attention.head_dim),
      state_({width_ * c.linear_attention.head_dim,
              (c.linear_attention.conv_kernel - 1) * 3 * width_}) {
  const KdaTensors t = KdaTensors::Of(c, plan.prefix, params);
  q_ = w.Matrix(t.proj[0]);
  k_ = w.Matrix(t.proj[1]);
  v_ = w.Matrix(t.proj[2]);
  for (int i = 0; i < 3; ++i) conv_[i] = w.Vector(t.conv[i]);
  a_log_ = w.Vector(t.a_log);
  dt_bias_ = w.Vector(t.dt_bias);
  f_a_ = w.Matrix(t.f_a);
  f_b_ = w.Matrix(t.f_b);
  b_ = w.Matrix(t.b);
  g_full_ = w.Matrix(t.g_full);
  g_a_ = w.Matrix(t.g_a);
  g_b_ = w.Matrix(t.g_b);
  o_norm_ = w.Vector(t.o_norm);
  o_ = w.Matrix(t.o);
}

void KdaAttention::Convolve(const float* in, float* out) {
  const uint32_t taps = kda_.conv_kernel;
  const uint64_t row = 3 * width_;
  std::span<float> history = state_.Part(kHistory);  // oldest first
  for (int m = 0; m < 3; ++m) {
    const float* w = conv_[m].data();
    for (uint64_t ch = 0; ch < width_; ++ch) {
      const uint64_t col = m * width_ + ch;
      float sum = 0.0f;
      for (uint32_t j = 0; j + 1 < taps; ++j) sum += w[ch * taps + j] * history[j * row + col];
      sum += w[ch * taps + taps - 1] * in[col];
      out[col] = Silu(sum);
    }
  }
  if (taps > 1) {
    std::copy(history.begin() + row, history.end(), history.begin());
    std::copy_n(in, row, history.end() - row);
  }
}

void KdaAttention::Head(uint32_t h, const float* qkv, const float* gate, float beta,
                        const float* out_gate, float* o) {
  const uint32_t dim = kda_.head_dim;
  const uint64_t at = uint64_t{h} * dim;
  std::vector<float> q(qkv + at, qkv + at + dim), k(qkv + width_ + at, qkv + width_ + at + dim);
  const float* v = qkv + 2 * width_ + at;
  L2Normalize(q.data(), dim);
  L2Normalize(k.data(), dim);
  const float q_scale = 1.0f / std::sqrt(static_cast<float>(dim));
  for (float& x : q) x *= q_scale;
  float* s = state_.Part(kS).data() + at * dim;  // [dim (key)][dim (value)]
  const float rate = std::exp(a_log_[h]), lower_bound = kda_.gate_lower_bound;
  for (uint32_t i = 0; i < dim; ++i) {
    const float f = gate[at + i] + dt_bias_[at + i];
    const float log_decay =
        lower_bound != 0.0f ? lower_bound * Sigmoid(rate * f) : -rate * Softplus(f);
    const float decay = std::exp(log_decay);
    for (uint32_t j = 0; j < dim; ++j) s[i * dim + j] *= decay;
  }
  std::vector<float> delta(dim, 0.0f);  // beta (v - k^T S)
  for (uint32_t i = 0; i < dim; ++i) {
    for (uint32_t j = 0; j < dim; ++j) delta[j] += k[i] * s[i * dim + j];
  }
  for (uint32_t j = 0; j < dim; ++j) delta[j] = beta * (v[j] - delta[j]);
  std::fill(o, o + dim, 0.0f);
  for (uint32_t i = 0; i < dim; ++i) {
    float* s_row = s + i * dim;
    for (uint32_t j = 0; j < dim; ++j) {
      s_row[j] += k[i] * delta[j];
      o[j] += q[i] * s_row[j];
    }
  }
  RmsNorm({o, dim}, o_norm_, c_.rms_norm_eps, {o, dim});
  for (uint32_t j = 0; j < dim; ++j) o[j] *= Sigmoid(out_gate[at + j]);
}

void KdaAttention::Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                           std::span<float> out) {
  const uint32_t heads = kda_.num_heads, dim = kda_.head_dim;
  const uint64_t row = 3 * width_;
  std::vector<float> proj(n * row);  // [n][q | k | v]
  {
    std::vector<float> part(n * width_);
    const kernels::MatrixView* mats[3] = {&q_, &k_, &v_};
    for (int m = 0; m < 3; ++m) {
      Linear(compute_, *mats[m], x.data(), n, part.data());
      for (uint32_t t = 0; t < n; ++t) {
        std::copy_n(&part[t * width_], width_, &proj[t * row + m * width_]);
      }
    }
  }
  std::vector<float> low(n * dim), gate(n * width_), out_gate(n * width_), beta(n * heads);
  Linear(compute_, f_a_, x.data(), n, low.data());
  Linear(compute_, f_b_, low.data(), n, gate.data());
  if (kda_.full_rank_gate) {
    Linear(compute_, g_full_, x.data(), n, out_gate.data());
  } else {
    Linear(compute_, g_a_, x.data(), n, low.data());
    Linear(compute_, g_b_, low.data(), n, out_gate.data());
  }
  Linear(compute_, b_, x.data(), n, beta.data());
  std::vector<float> qkv(row), o(n * width_);
  for (uint32_t t = 0; t < n; ++t) {
    Convolve(&proj[t * row], qkv.data());
    compute_.ParallelFor(heads, 1, [&](size_t begin, size_t end) {
      for (size_t h = begin; h < end; ++h) {
        Head(static_cast<uint32_t>(h), qkv.data(), &gate[t * width_], Sigmoid(beta[t * heads + h]),
             &out_gate[t * width_], &o[t * width_ + h * dim]);
      }
    });
    state_.Advanced(first_pos + t);
  }
  TellBeforeOutput(o, n);
  Linear(compute_, o_, o.data(), n, out.data());
}

}  // namespace warp::computed
