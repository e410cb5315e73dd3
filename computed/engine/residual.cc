#include "computed/engine/residual.h"

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

  void AddSublayerOutput(uint32_t, Sublayer, std::span<const float> y) override {
    for (uint64_t i = 0; i < uint64_t{n_} * hidden_; ++i) h_[i] += y[i];
  }

  void FinalInput(std::span<float> x) override { Normalize(final_norm_, x); }

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
    std::vector<float> mixed = Mix(mixes_[layer][static_cast<int>(sublayer)]);
    if (sublayer == Sublayer::kMixer && layer % block_ == 0) bank_.push_back(sum_);
    for (uint32_t t = 0; t < n_; ++t) {
      RmsNorm({&mixed[t * hidden_], hidden_}, norms_[layer][static_cast<int>(sublayer)], eps_,
              {&x[t * hidden_], hidden_});
    }
  }

  void AddSublayerOutput(uint32_t layer, Sublayer sublayer, std::span<const float> y) override {
    if (sublayer == Sublayer::kMixer && layer % block_ == 0) {  // a new block's sum
      std::copy_n(y.begin(), sum_.size(), sum_.begin());
      return;
    }
    for (size_t i = 0; i < sum_.size(); ++i) sum_[i] += y[i];
  }

  void FinalInput(std::span<float> x) override {
    std::vector<float> mixed = Mix(final_mix_);
    for (uint32_t t = 0; t < n_; ++t) {
      RmsNorm({&mixed[t * hidden_], hidden_}, final_norm_, eps_, {&x[t * hidden_], hidden_});
    }
  }

 private:
  struct Query {
    std::span<const float> norm, proj;
  };
  static Query Bind(const TrunkWeights& w, const ResidualMix& mix) {
    return {w.Vector(mix.norm), w.Vector(mix.proj)};
  }

  // Per token: sum_j softmax_j(proj . RMSNorm(V_j; norm)) V_j over V = bank, sum.
  std::vector<float> Mix(const Query& q) const {
    std::vector<float> mixed(sum_.size(), 0.0f), normed(hidden_);
    std::vector<float> scores(bank_.size() + 1);
    for (uint32_t t = 0; t < n_; ++t) {
      auto candidate = [&](size_t j) {
        return &(j < bank_.size() ? bank_[j] : sum_)[t * hidden_];
      };
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

}  // namespace

std::unique_ptr<ResidualScheme> ResidualScheme::Create(const ModelConfig& config,
                                                       const ModelPlan& plan,
                                                       const TrunkWeights& weights) {
  switch (plan.residual) {
    case ResidualKind::kPreNorm:
      return std::make_unique<PreNormResidual>(config, plan, weights);
    case ResidualKind::kAttnRes:
      return std::make_unique<AttnResResidual>(config, plan, weights);
  }
  return nullptr;
}

}  // namespace warp::computed
