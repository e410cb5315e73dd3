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

}  // namespace

std::unique_ptr<ResidualScheme> ResidualScheme::Create(const ModelConfig& config,
                                                       const ModelPlan& plan,
                                                       const TrunkWeights& weights) {
  switch (plan.residual) {
    case ResidualKind::kPreNorm:
      return std::make_unique<PreNormResidual>(config, plan, weights);
  }
  return nullptr;
}

}  // namespace warp::computed
