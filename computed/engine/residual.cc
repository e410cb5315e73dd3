#include "computed/engine/residual.h"

#include <cmath>

#include "common/kernels/matmul.h"
#include "computed/engine/ops.h"

namespace warp::computed {
namespace {

// h += mixer(norm(h)); h += ffn(norm(h)); head(norm(h)).
class PreNormResidual : public ResidualScheme {
 public:
  PreNormResidual(const ModelConfig& c, const ModelPlan& plan, const TrunkWeights& w)
      : hidden_(c.hidden_size), eps_(c.rms_norm_eps), final_norm_(w.Vector(plan.final_norm)) {
    for (const LayerPlan& layer : plan.layers) {
      norms_.push_back({w.Vector(layer.input_norm), w.Vector(layer.post_norm)});
    }
  }

  void Begin(std::vector<float> embeddings, uint32_t n) override {
    h_ = std::move(embeddings);
    n_ = n;
  }

  void SublayerInput(uint32_t layer, Sublayer sublayer, std::span<float> x) override {
    Normalize(norms_[layer][static_cast<int>(sublayer)], x);
  }

  void EstimateFfnInput(uint32_t layer, std::span<float> x) const override {
    Normalize(norms_[layer][static_cast<int>(Sublayer::kFfn)], x);
  }

  void AddSublayerOutput(uint32_t, Sublayer, std::span<const float> y) override {
    for (uint64_t i = 0; i < uint64_t{n_} * hidden_; ++i) h_[i] += y[i];
  }

  void FinalInput(std::span<float> x) override { Normalize(final_norm_, x); }
  std::span<const float> stream() const override { return h_; }

 private:
  void Normalize(std::span<const float> weight, std::span<float> x) const {
    for (uint32_t t = 0; t < n_; ++t) {
      RmsNorm({&h_[t * hidden_], hidden_}, weight, eps_, {&x[t * hidden_], hidden_});
    }
  }

  uint64_t hidden_;
  float eps_;
  std::span<const float> final_norm_;
  std::vector<std::array<std::span<const float>, 2>> norms_;  // [layer][sublayer]
  std::vector<float> h_;
  uint32_t n_ = 0;
};

// Kimi K3's attention residuals: instead of one stream, each token keeps
// the inputs of every attn_res_block-th layer (the bank) and the running sum
// of the current block; a sublayer reads a softmax mix of the bank and that
// sum, scored by a learned pseudo-query against each RMS-normalized
// candidate. A block start banks its input and restarts the sum at the
// mixer's output; a final mix comes before the last norm.
class AttnResResidual : public ResidualScheme {
 public:
  AttnResResidual(const ModelConfig& c, const ModelPlan& plan, const TrunkWeights& w)
      : hidden_(c.hidden_size),
        eps_(c.rms_norm_eps),
        block_(plan.attn_res_block),
        final_norm_(w.Vector(plan.final_norm)),
        final_mix_(Bind(w, plan.final_mix)) {
    for (const LayerPlan& layer : plan.layers) {
      norms_.push_back({w.Vector(layer.input_norm), w.Vector(layer.post_norm)});
      mixes_.push_back({Bind(w, layer.mixer_mix), Bind(w, layer.ffn_mix)});
    }
  }

  void Begin(std::vector<float> embeddings, uint32_t n) override {
    sum_ = std::move(embeddings);
    bank_.clear();
    n_ = n;
  }

  void SublayerInput(uint32_t layer, Sublayer sublayer, std::span<float> x) override {
    const auto s = static_cast<int>(sublayer);
    MixNormalized(mixes_[layer][s], norms_[layer][s], x);
    if (sublayer == Sublayer::kMixer && layer % block_ == 0) bank_.push_back(sum_);
  }

  // The FFN's mix over the bank and the sum as they stand (at a block start
  // the mixer would bank the sum and restart it: an estimate).
  void EstimateFfnInput(uint32_t layer, std::span<float> x) const override {
    const auto s = static_cast<int>(Sublayer::kFfn);
    MixNormalized(mixes_[layer][s], norms_[layer][s], x);
  }

  void AddSublayerOutput(uint32_t layer, Sublayer sublayer, std::span<const float> y) override {
    if (sublayer == Sublayer::kMixer && layer % block_ == 0) {  // a new block's sum
      std::copy_n(y.begin(), sum_.size(), sum_.begin());
      return;
    }
    for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += y[i];
  }

  void FinalInput(std::span<float> x) override { MixNormalized(final_mix_, final_norm_, x); }

 private:
  struct Query {
    std::span<const float> norm, proj;
  };
  static Query Bind(const TrunkWeights& w, const ResidualMix& mix) {
    return {w.Vector(mix.norm), w.Vector(mix.proj)};
  }

  // Mix(q), each row RMSNorm'ed with `norm`, into x.
  void MixNormalized(const Query& q, std::span<const float> norm, std::span<float> x) const {
    const std::vector<float> mixed = Mix(q);
    for (uint32_t t = 0; t < n_; ++t) {
      RmsNorm({&mixed[t * hidden_], hidden_}, norm, eps_, {&x[t * hidden_], hidden_});
    }
  }

  // Per token: sum_j softmax_j(proj . RMSNorm(V_j; norm)) V_j over V = bank, sum.
  std::vector<float> Mix(const Query& q) const {
    std::vector<float> mixed(sum_.size(), 0.0f), normed(hidden_);
    std::vector<float> scores(bank_.size() + 1);
    for (uint32_t t = 0; t < n_; ++t) {
      auto candidate = [&](size_t j) { return &(j < bank_.size() ? bank_[j] : sum_)[t * hidden_]; };
      for (size_t j = 0; j < scores.size(); ++j) {
        RmsNorm({candidate(j), hidden_}, q.norm, eps_, normed);
        float score = 0.0f;
        for (uint64_t i = 0; i < hidden_; ++i) score += q.proj[i] * normed[i];
        scores[j] = score;
      }
      Softmax(scores);
      float* out = &mixed[t * hidden_];
      for (size_t j = 0; j < scores.size(); ++j) {
        const float* v = candidate(j);
        for (uint64_t i = 0; i < hidden_; ++i) out[i] += scores[j] * v[i];
      }
    }
    return mixed;
  }

  uint64_t hidden_;
  float eps_;
  uint32_t block_;
  std::span<const float> final_norm_;
  Query final_mix_;
  std::vector<std::array<std::span<const float>, 2>> norms_;  // [layer][sublayer]
  std::vector<std::array<Query, 2>> mixes_;                   // [layer][sublayer]
  std::vector<std::vector<float>> bank_;  // banked layer inputs, each [n][hidden]
  std::vector<float> sum_;                // the current block's running sum [n][hidden]
  uint32_t n_ = 0;
};

// DeepSeek V4's manifold-constrained hyper-connections: `mult` streams per
// token. At each site a weightless RMSNorm of all streams, times fn, gives
// pre = sigmoid + eps, post = 2 sigmoid and comb = softmax + eps made doubly
// stochastic by Sinkhorn; the sublayer reads sum_j pre_j stream_j, and
// stream k becomes post_k y + sum_j comb[j][k] stream_j. The head reduces the
// streams with pre of its own (DeepSeek V4), or takes their mean (GLM-5.3).
// Single pass (DeepSeek V4.1): the sublayer reads the streams collapsed by
// the previous site's pre (the first sublayer: stream 0), and the head by
// the last site's.
class HyperConnectionResidual : public ResidualScheme {
 public:
  HyperConnectionResidual(const ModelConfig& c, const ModelPlan& plan, const TrunkWeights& w)
      : hidden_(c.hidden_size),
        eps_(c.rms_norm_eps),
        hc_(c.hyper),
        final_norm_(w.Vector(plan.final_norm)),
        head_(plan.hc_head.fn.empty() ? Site{} : Bind(w, plan.hc_head)),
        single_pass_(plan.hc_single_pass) {
    for (const LayerPlan& layer : plan.layers) {
      norms_.push_back({w.Vector(layer.input_norm), w.Vector(layer.post_norm)});
      sites_.push_back({Bind(w, layer.mixer_hc), Bind(w, layer.ffn_hc)});
    }
  }

  void Begin(std::vector<float> embeddings, uint32_t n) override {
    n_ = n;
    if (single_pass_) {  // one-hot: the first sublayer reads stream 0
      pending_pre_.assign(uint64_t{n} * hc_.mult, 0.0f);
      for (uint32_t t = 0; t < n; ++t) pending_pre_[uint64_t{t} * hc_.mult] = 1.0f;
    }
    streams_.resize(uint64_t{n} * hc_.mult * hidden_);
    for (uint32_t t = 0; t < n; ++t) {
      for (uint32_t k = 0; k < hc_.mult; ++k) {
        std::copy_n(&embeddings[uint64_t{t} * hidden_], hidden_, Stream(t, k));
      }
    }
  }

  void SublayerInput(uint32_t layer, Sublayer sublayer, std::span<float> x) override {
    Collapse(layer, sublayer, x, post_, comb_, single_pass_ ? &pending_pre_ : nullptr);
  }

  void EstimateFfnInput(uint32_t layer, std::span<float> x) const override {
    std::vector<float> post, comb, pre = pending_pre_;
    Collapse(layer, Sublayer::kFfn, x, post, comb, single_pass_ ? &pre : nullptr);
  }

  std::span<float> streams() override { return streams_; }

  void AddSublayerOutput(uint32_t, Sublayer, std::span<const float> y) override {
    const uint32_t m = hc_.mult;
    std::vector<float> mixed(uint64_t{m} * hidden_);
    for (uint32_t t = 0; t < n_; ++t) {
      const float* comb = &comb_[uint64_t{t} * m * m];
      const float* out = &y[uint64_t{t} * hidden_];
      for (uint32_t k = 0; k < m; ++k) {
        float* dst = &mixed[uint64_t{k} * hidden_];
        const float post = post_[uint64_t{t} * m + k];
        for (uint64_t i = 0; i < hidden_; ++i) dst[i] = post * out[i];
        for (uint32_t j = 0; j < m; ++j) {
          const float w = comb[uint64_t{j} * m + k];
          const float* s = Stream(t, j);
          for (uint64_t i = 0; i < hidden_; ++i) dst[i] += w * s[i];
        }
      }
      std::copy(mixed.begin(), mixed.end(), Stream(t, 0));
    }
  }

  void FinalInput(std::span<float> x) override {
    const uint32_t m = hc_.mult;
    std::vector<float> collapsed(hidden_);
    if (single_pass_) {  // the last site's pre, then the final norm
      for (uint32_t t = 0; t < n_; ++t) {
        CollapseWith(t, &pending_pre_[uint64_t{t} * m], collapsed);
        RmsNorm(collapsed, final_norm_, eps_, {&x[uint64_t{t} * hidden_], hidden_});
      }
      return;
    }
    for (uint32_t t = 0; t < n_; ++t) {
      // GLM-5.3's head has no weights: the mean of the streams.
      const std::vector<float> mixes = head_.base.empty() ? std::vector<float>() : Mixes(head_, t);
      std::fill(collapsed.begin(), collapsed.end(), 0.0f);
      for (uint32_t j = 0; j < m; ++j) {
        const float pre = mixes.empty()
                              ? 1.0f / static_cast<float>(m)
                              : Sigmoid(mixes[j] * head_.scale[0] + head_.base[j]) + hc_.eps;
        const float* s = Stream(t, j);
        for (uint64_t i = 0; i < hidden_; ++i) collapsed[i] += pre * s[i];
      }
      RmsNorm(collapsed, final_norm_, eps_, {&x[uint64_t{t} * hidden_], hidden_});
    }
  }

 private:
  struct Site {
    kernels::MatrixView fn;
    std::span<const float> base, scale;
  };
  static Site Bind(const TrunkWeights& w, const HyperSite& site) {
    return {w.Matrix(site.fn), w.Vector(site.base), w.Vector(site.scale)};
  }
  static float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

  float* Stream(uint32_t t, uint32_t k) {
    return &streams_[(uint64_t{t} * hc_.mult + k) * hidden_];
  }
  const float* Stream(uint32_t t, uint32_t k) const {
    return &streams_[(uint64_t{t} * hc_.mult + k) * hidden_];
  }
  // Token t's streams weighted by pre [m], summed into `collapsed`.
  void CollapseWith(uint32_t t, const float* pre, std::vector<float>& collapsed) const {
    std::fill(collapsed.begin(), collapsed.end(), 0.0f);
    for (uint32_t j = 0; j < hc_.mult; ++j) {
      const float* s = Stream(t, j);
      for (uint64_t i = 0; i < hidden_; ++i) collapsed[i] += pre[j] * s[i];
    }
  }

  // The sublayer's input into x, and its post and comb weights [n][m],
  // [n][m][m] for AddSublayerOutput. With `pending` (single pass), the
  // streams collapse by the pre it holds [n][m], which this site's replaces.
  void Collapse(uint32_t layer, Sublayer sublayer, std::span<float> x, std::vector<float>& post,
                std::vector<float>& comb, std::vector<float>* pending) const {
    const Site& site = sites_[layer][static_cast<int>(sublayer)];
    const uint32_t m = hc_.mult;
    post.resize(uint64_t{n_} * m);
    comb.resize(uint64_t{n_} * m * m);
    std::vector<float> mixes, collapsed(hidden_), pre(m);
    for (uint32_t t = 0; t < n_; ++t) {
      mixes = Mixes(site, t);
      const float* pre_w = mixes.data();
      const float* post_w = pre_w + m;
      const float* comb_w = post_w + m;
      for (uint32_t j = 0; j < m; ++j) {
        pre[j] = Sigmoid(pre_w[j] * site.scale[0] + site.base[j]) + hc_.eps;
        post[uint64_t{t} * m + j] = 2.0f * Sigmoid(post_w[j] * site.scale[1] + site.base[m + j]);
      }
      if (pending != nullptr) {
        float* previous = &(*pending)[uint64_t{t} * m];
        CollapseWith(t, previous, collapsed);
        std::copy(pre.begin(), pre.end(), previous);
      } else {
        CollapseWith(t, pre.data(), collapsed);
      }
      float* comb_t = &comb[uint64_t{t} * m * m];
      for (uint32_t j = 0; j < m; ++j) {  // row j: softmax over k, + eps
        std::span<float> row(comb_t + uint64_t{j} * m, m);
        for (uint32_t k = 0; k < m; ++k) {
          row[k] = comb_w[j * m + k] * site.scale[2] + site.base[2 * m + j * m + k];
        }
        Softmax(row);
        for (float& v : row) v += hc_.eps;
      }
      Sinkhorn(comb_t);
      RmsNorm(collapsed, norms_[layer][static_cast<int>(sublayer)], eps_,
              {&x[uint64_t{t} * hidden_], hidden_});
    }
  }

  // fn . RMSNorm(the token's streams, flattened, no weight).
  std::vector<float> Mixes(const Site& site, uint32_t t) const {
    const uint64_t flat = uint64_t{hc_.mult} * hidden_;
    std::vector<float> normed(flat), mixes(site.fn.rows);
    RmsNormUnweighted({Stream(t, 0), flat}, eps_, normed);
    kernels::MatMulRows(site.fn, normed, 1, 0, site.fn.rows, mixes, site.fn.rows);
    return mixes;
  }

  // Columns, then (iters - 1) times rows and columns, each divided by its sum + eps.
  void Sinkhorn(float* comb) const {
    const uint32_t m = hc_.mult;
    auto columns = [&] {
      for (uint32_t k = 0; k < m; ++k) {
        float sum = 0.0f;
        for (uint32_t j = 0; j < m; ++j) sum += comb[j * m + k];
        for (uint32_t j = 0; j < m; ++j) comb[j * m + k] /= sum + hc_.eps;
      }
    };
    auto rows = [&] {
      for (uint32_t j = 0; j < m; ++j) {
        float sum = 0.0f;
        for (uint32_t k = 0; k < m; ++k) sum += comb[j * m + k];
        for (uint32_t k = 0; k < m; ++k) comb[j * m + k] /= sum + hc_.eps;
      }
    };
    columns();
    for (uint32_t i = 1; i < hc_.sinkhorn_iters; ++i) {
      rows();
      columns();
    }
  }

  uint64_t hidden_;
  float eps_;
  HyperConnections hc_;
  std::span<const float> final_norm_;
  Site head_;
  std::vector<std::array<std::span<const float>, 2>> norms_;  // [layer][sublayer]
  std::vector<std::array<Site, 2>> sites_;                    // [layer][sublayer]
  std::vector<float> streams_;                                // [n][mult][hidden]
  std::vector<float> post_, comb_;  // the current site's [n][mult], [n][mult][mult]
  bool single_pass_;
  std::vector<float> pending_pre_;  // single pass: the last site's pre [n][mult]
  uint32_t n_ = 0;
};

}  // namespace

std::unique_ptr<ResidualScheme> ResidualScheme::Create(const ModelConfig& config,
                                                       const ModelPlan& plan,
                                                       const TrunkWeights& weights) {
  switch (plan.residual) {
    case ResidualKind::kPreNorm:
      return std::make_unique<PreNormResidual>(config, plan, weights);
    case ResidualKind::kAttnRes:
      return std::make_unique<AttnResResidual>(config, plan, weights);
    case ResidualKind::kHyperConnections:
      return std::make_unique<HyperConnectionResidual>(config, plan, weights);
  }
  return nullptr;
}

}  // namespace warp::computed
