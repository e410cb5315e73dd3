#include "computed/model/tensor_specs.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "computed/model/family.h"
#include "computed/model/kinds/moe.h"

namespace warp::computed {
namespace {

using Shape = std::vector<uint64_t>;

// Appends trunk tensors, choosing f32 for the precision-critical ones, each
// of the kind set last (SetKind).
class SpecList {
 public:
  explicit SpecList(TensorFormat matrix_format) : matrix_format_(matrix_format) {}

  void SetKind(TrunkKind kind) { kind_ = kind; }

  // `f32`: TensorRef::f32.
  void Add(std::string name, Shape shape, bool f32 = false, bool zero_padded = false) {
    TensorSpec spec{.name = std::move(name), .format = matrix_format_, .shape = std::move(shape)};
    f32 = f32 || spec.shape.size() != 2;
    if (f32 || !ShapeProblem(spec.format, spec.shape).empty()) spec.format = TensorFormat::kF32;
    tensors_.push_back(
        {.spec = std::move(spec), .kind = kind_, .f32 = f32, .zero_padded = zero_padded});
  }

  // A kind's tensor, of the kind it says.
  void Add(const TensorRef& tensor, TrunkKind kind) {
    const TrunkKind saved = kind_;
    kind_ = kind;
    Add(tensor.name, tensor.shape, tensor.f32, tensor.zero_padded);
    kind_ = saved;
  }

  // What the kinds' ForEach calls: Add. Lives as long as this list.
  TensorVisitor visitor() const { return visitor_; }

  std::vector<TrunkTensor> Take() { return std::move(tensors_); }

 private:
  TensorFormat matrix_format_;
  TrunkKind kind_ = TrunkKind::kOther;
  std::vector<TrunkTensor> tensors_;
  std::function<void(const TensorRef&, TrunkKind)> add_ = [this](const TensorRef& tensor,
                                                                 TrunkKind kind) {
    Add(tensor, kind);
  };
  TensorVisitor visitor_{add_};
};

// One hyper-connection site: `outputs` mixes of the flattened streams.
void AddHyperSite(const ModelConfig& c, const HyperSite& site, uint64_t outputs, uint64_t scales,
                  SpecList& specs) {
  specs.Add(site.fn, {outputs, uint64_t{c.hyper.mult} * c.hidden_size}, /*f32=*/true);
  specs.Add(site.base, {outputs});
  specs.Add(site.scale, {scales});
}

void AddMix(const ModelConfig& c, const ResidualMix& mix, SpecList& specs) {
  specs.Add(mix.norm, {c.hidden_size});
  specs.Add(mix.proj, {1, c.hidden_size}, /*f32=*/true);  // the pseudo-query
}

void AddFfn(const ModelConfig& c, const FfnPlan& f, SpecList& specs) {
  const uint64_t hidden = c.hidden_size;
  switch (f.kind) {
    case FfnKind::kDenseMlp:
      MlpTensors::Of(f.prefix, f.mlp, hidden, f.intermediate)
          .ForEach(TrunkKind::kDenseMlp, specs.visitor());
      return;
    case FfnKind::kMoe:
      MoeTensors::Of(c, f).ForEach(specs.visitor());
      return;
  }
}

}  // namespace

ModelPlan PlanOf(const ModelConfig& config) { return FamilyOf(config.arch).Plan(config); }

namespace {

constexpr std::pair<TrunkKind, std::string_view> kTrunkKindNames[] = {
    {TrunkKind::kEmbedding, "embedding"},
    {TrunkKind::kHead, "head"},
    {TrunkKind::kAttention, "attention"},
    {TrunkKind::kIndexer, "indexer"},
    {TrunkKind::kLinearAttention, "linear_attention"},
    {TrunkKind::kDenseMlp, "dense_mlp"},
    {TrunkKind::kSharedExperts, "shared_experts"},
    {TrunkKind::kLatentProjection, "latent_projection"},
    {TrunkKind::kOther, "other"},
};

}  // namespace

std::string_view TrunkKindName(TrunkKind kind) {
  for (const auto& [k, name] : kTrunkKindNames) {
    if (k == kind) return name;
  }
  return "other";
}

std::optional<TrunkKind> ParseTrunkKind(std::string_view name) {
  for (const auto& [kind, known] : kTrunkKindNames) {
    if (known == name) return kind;
  }
  return std::nullopt;
}

std::vector<TensorSpec> TrunkTensorSpecs(const ModelConfig& c, TensorFormat matrix_format) {
  std::vector<TensorSpec> specs;
  for (TrunkTensor& tensor : TrunkTensors(c, matrix_format)) specs.push_back(std::move(tensor.spec));
  return specs;
}

std::vector<TrunkTensor> TrunkTensors(const ModelConfig& c, TensorFormat matrix_format) {
  const ModelPlan plan = PlanOf(c);
  SpecList specs(matrix_format);
  specs.SetKind(TrunkKind::kEmbedding);
  specs.Add(plan.embed, {c.vocab_size, c.hidden_size});
  const bool attn_res = plan.residual == ResidualKind::kAttnRes;
  const bool hyper = plan.residual == ResidualKind::kHyperConnections;
  const uint64_t site_outputs = (2 + uint64_t{c.hyper.mult}) * c.hyper.mult;
  for (const LayerPlan& layer : plan.layers) {
    specs.SetKind(TrunkKind::kOther);  // mixes and norms, f32
    if (attn_res) AddMix(c, layer.mixer_mix, specs);
    if (hyper) AddHyperSite(c, layer.mixer_hc, site_outputs, 3, specs);
    if (layer.engram.present()) EngramTensors::Of(c, layer.engram).ForEach(specs.visitor());
    specs.SetKind(TrunkKind::kOther);
    specs.Add(layer.input_norm, {c.hidden_size});
    ForEachMixerTensor(c, layer.mixer, specs.visitor());
    specs.SetKind(TrunkKind::kOther);
    if (attn_res) AddMix(c, layer.ffn_mix, specs);
    if (hyper) AddHyperSite(c, layer.ffn_hc, site_outputs, 3, specs);
    specs.Add(layer.post_norm, {c.hidden_size});
    AddFfn(c, layer.ffn, specs);
  }
  specs.SetKind(TrunkKind::kOther);
  if (attn_res) AddMix(c, plan.final_mix, specs);
  if (hyper && !plan.hc_head.fn.empty()) AddHyperSite(c, plan.hc_head, c.hyper.mult, 1, specs);
  specs.Add(plan.final_norm, {c.hidden_size});
  specs.SetKind(TrunkKind::kHead);
  if (plan.head != plan.embed) specs.Add(plan.head, {c.vocab_size, c.hidden_size});
  return specs.Take();
}

std::vector<TensorSpec> ExpertMatrixSpecs(const ModelConfig& config, TensorFormat format) {
  return FamilyOf(config.arch).ExpertMatrices(config, format);
}

bool HasEarlyRoute(const ModelPlan& plan, const LayerPlan& layer) {
  return plan.residual == ResidualKind::kPreNorm && layer.ffn.kind == FfnKind::kMoe &&
         layer.ffn.hash_table.empty() && EndsInOutputProjection(layer.mixer);
}

std::string EarlyRouteFoldName(const LayerPlan& layer) {
  std::string router = layer.ffn.router_weight;
  if (absl::EndsWith(router, ".weight")) router.resize(router.size() - 7);
  return router + ".o_proj_fold";
}

std::vector<TensorSpec> EarlyRouteFoldSpecs(const ModelConfig& config) {
  const ModelPlan plan = PlanOf(config);
  std::vector<TensorSpec> specs;
  for (const LayerPlan& layer : plan.layers) {
    if (!HasEarlyRoute(plan, layer)) continue;
    const std::optional<TensorRef> output = OutputProjectionTensor(config, layer.mixer);
    specs.push_back({.name = EarlyRouteFoldName(layer),
                     .format = TensorFormat::kF32,
                     .shape = {config.num_experts, output->shape[1]}});
  }
  return specs;
}

}  // namespace warp::computed
