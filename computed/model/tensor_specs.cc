#include "computed/model/tensor_specs.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "computed/model/family.h"

namespace warp::computed {
namespace {

using Shape = std::vector<uint64_t>;

// Appends trunk tensors, choosing f32 for the precision-critical ones, each
// of the kind set last (SetKind).
class SpecList {
 public:
  explicit SpecList(TensorFormat matrix_format) : matrix_format_(matrix_format) {}

  void SetKind(TrunkKind kind) { kind_ = kind; }

  void Add(std::string name, Shape shape) {
    TensorSpec spec{.name = std::move(name), .format = matrix_format_, .shape = std::move(shape)};
    if (IsPrecisionCritical(spec) || !ShapeProblem(spec.format, spec.shape).empty()) {
      spec.format = TensorFormat::kF32;
    }
    tensors_.push_back({.spec = std::move(spec), .kind = kind_});
  }

  void AddMlp(const std::string& prefix, const MlpNames& names, uint64_t hidden,
              uint64_t intermediate) {
    Add(prefix + "." + names.gate + ".weight", {intermediate, hidden});
    Add(prefix + "." + names.up + ".weight", {intermediate, hidden});
    Add(prefix + "." + names.down + ".weight", {hidden, intermediate});
  }

  std::vector<TrunkTensor> Take() { return std::move(tensors_); }

 private:
  TensorFormat matrix_format_;
  TrunkKind kind_ = TrunkKind::kOther;
  std::vector<TrunkTensor> tensors_;
};

void AddMla(const ModelConfig& c, const MixerPlan& m, SpecList& specs) {
  const std::string& p = m.prefix;
  const uint64_t q_head = uint64_t{c.qk_nope_head_dim} + c.qk_rope_head_dim;
  if (c.q_lora_rank > 0) {
    specs.Add(p + "q_a_proj.weight", {c.q_lora_rank, c.hidden_size});
    specs.Add(p + "q_a_layernorm.weight", {c.q_lora_rank});
    specs.Add(p + "q_b_proj.weight", {c.num_heads * q_head, c.q_lora_rank});
  } else {
    specs.Add(p + "q_proj.weight", {c.num_heads * q_head, c.hidden_size});
  }
  specs.Add(p + "kv_a_proj_with_mqa.weight",
            {uint64_t{c.kv_lora_rank} + c.qk_rope_head_dim, c.hidden_size});
  specs.Add(p + "kv_a_layernorm.weight", {c.kv_lora_rank});
  if (c.kv_b_split) {
    specs.Add(p + "k_b_proj.weight", {uint64_t{c.num_heads} * c.kv_lora_rank, c.qk_nope_head_dim});
    specs.Add(p + "v_b_proj.weight", {uint64_t{c.num_heads} * c.v_head_dim, c.kv_lora_rank});
  } else {
    specs.Add(p + "kv_b_proj.weight",
              {uint64_t{c.num_heads} * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank});
  }
  if (m.output_gate)
    specs.Add(p + "g_proj.weight", {uint64_t{c.num_heads} * c.v_head_dim, c.hidden_size});
  if (m.dsa_indexer) {  // GLM-5.3's pooled indexer
    specs.SetKind(TrunkKind::kIndexer);
    const DsaIndexer& d = c.dsa;
    const std::string ix = p + "indexer.";
    specs.Add(ix + "wq_b.weight", {uint64_t{d.index_heads} * d.index_head_dim, c.q_lora_rank});
    specs.Add(ix + "wk.weight", {d.index_head_dim, c.hidden_size});
    specs.Add(ix + "k_norm.weight", {d.index_head_dim});
    specs.Add(ix + "k_norm.bias", {d.index_head_dim});
    specs.Add(ix + "weights_proj.weight", {d.index_heads, c.hidden_size});
    specs.Add(ix + "index_kpool_compress_ape", {d.kpool, d.index_head_dim});
    specs.Add(ix + "index_kpool_compress_gate", {d.index_head_dim, c.hidden_size});
    specs.SetKind(TrunkKind::kAttention);
  }
  specs.Add(p + "o_proj.weight", {c.hidden_size, uint64_t{c.num_heads} * c.v_head_dim});
}

// DeepSeek V4's attention, under the release's names (docs/ENGINE.md#deepseek-v4).
void AddCompressedMqa(const ModelConfig& c, const MixerPlan& m, SpecList& specs) {
  const std::string& p = m.prefix;
  const CompressedAttention& ca = c.compressed;
  const uint64_t hidden = c.hidden_size, dim = c.head_dim, heads = c.num_heads;
  specs.Add(p + "wq_a.weight", {c.q_lora_rank, hidden});
  specs.Add(p + "q_norm.weight", {c.q_lora_rank});
  specs.Add(p + "wq_b.weight", {heads * dim, c.q_lora_rank});
  specs.Add(p + "wkv.weight", {dim, hidden});
  specs.Add(p + "kv_norm.weight", {dim});
  specs.Add(p + "wo_a.weight", {uint64_t{ca.o_groups} * ca.o_lora_rank, heads * dim / ca.o_groups});
  specs.Add(p + "wo_b.weight", {hidden, uint64_t{ca.o_groups} * ca.o_lora_rank});
  specs.Add(p + "attn_sink", {heads});
  specs.SetKind(TrunkKind::kIndexer);  // the compressors and the indexer
  auto compressor = [&](const std::string& q, uint64_t width, uint64_t out_dim) {
    specs.Add(q + "wkv.weight", {width, hidden});
    specs.Add(q + "wgate.weight", {width, hidden});
    specs.Add(q + "ape", {m.compress_rate, width});
    specs.Add(q + "norm.weight", {out_dim});
  };
  if (m.compression == CompressionKind::kHca) compressor(p + "compressor.", dim, dim);
  if (m.compression == CompressionKind::kCsa) {
    compressor(p + "compressor.", 2 * dim, dim);
    specs.Add(p + "indexer.wq_b.weight",
              {uint64_t{ca.index_heads} * ca.index_head_dim, c.q_lora_rank});
    specs.Add(p + "indexer.weights_proj.weight", {ca.index_heads, hidden});
    compressor(p + "indexer.compressor.", 2 * uint64_t{ca.index_head_dim}, ca.index_head_dim);
  }
}

// One hyper-connection site: `outputs` mixes of the flattened streams.
void AddHyperSite(const ModelConfig& c, const HyperSite& site, uint64_t outputs, uint64_t scales,
                  SpecList& specs) {
  specs.Add(site.fn, {outputs, uint64_t{c.hyper.mult} * c.hidden_size});
  specs.Add(site.base, {outputs});
  specs.Add(site.scale, {scales});
}

void AddMix(const ModelConfig& c, const ResidualMix& mix, SpecList& specs) {
  specs.Add(mix.norm, {c.hidden_size});
  specs.Add(mix.proj, {1, c.hidden_size});
}

void AddGqa(const ModelConfig& c, const MixerPlan& m, SpecList& specs) {
  const std::string& p = m.prefix;
  const uint64_t q_dim = uint64_t{c.num_heads} * c.head_dim;
  const uint64_t kv_dim = uint64_t{c.num_kv_heads} * c.head_dim;
  specs.Add(p + "q_proj.weight", {q_dim, c.hidden_size});
  specs.Add(p + "k_proj.weight", {kv_dim, c.hidden_size});
  specs.Add(p + "v_proj.weight", {kv_dim, c.hidden_size});
  if (m.qkv_bias) {
    specs.Add(p + "q_proj.bias", {q_dim});
    specs.Add(p + "k_proj.bias", {kv_dim});
    specs.Add(p + "v_proj.bias", {kv_dim});
  }
  specs.Add(p + "o_proj.weight", {c.hidden_size, q_dim});
  if (m.o_bias) specs.Add(p + "o_proj.bias", {c.hidden_size});
  if (m.qk_norm) {
    specs.Add(p + "q_norm.weight", {c.head_dim});
    specs.Add(p + "k_norm.weight", {c.head_dim});
  }
  if (m.sinks) specs.Add(p + "sinks", {c.num_heads});
}

// Kimi Delta Attention (KimiDeltaAttention of modeling_kimi.py), under the release's names.
void AddKda(const ModelConfig& c, const MixerPlan& m, SpecList& specs) {
  const std::string& p = m.prefix;
  const LinearAttention& kda = c.linear_attention;
  const uint64_t hidden = c.hidden_size, dim = kda.head_dim, width = uint64_t{kda.num_heads} * dim;
  for (const char* x : {"q", "k", "v"}) {
    specs.Add(absl::StrCat(p, x, "_proj.weight"), {width, hidden});
    specs.Add(absl::StrCat(p, x, "_conv1d.weight"), {width, 1, kda.conv_kernel});  // depthwise
  }
  specs.Add(p + "A_log", m.a_log_shape);
  specs.Add(p + "dt_bias", {width});
  specs.Add(p + "f_a_proj.weight", {dim, hidden});
  specs.Add(p + "f_b_proj.weight", {width, dim});
  specs.Add(p + "b_proj.weight", {kda.num_heads, hidden});
  if (kda.full_rank_gate) {
    specs.Add(p + "g_proj.weight", {width, hidden});
  } else {
    specs.Add(p + "g_a_proj.weight", {dim, hidden});
    specs.Add(p + "g_b_proj.weight", {width, dim});
  }
  specs.Add(p + "o_norm.weight", {dim});
  specs.Add(p + "o_proj.weight", {hidden, width});
}

void AddFfn(const ModelConfig& c, const FfnPlan& f, SpecList& specs) {
  const uint64_t hidden = c.hidden_size;
  switch (f.kind) {
    case FfnKind::kDenseMlp:
      specs.SetKind(TrunkKind::kDenseMlp);
      specs.AddMlp(f.prefix, f.mlp, hidden, f.intermediate);
      return;
    case FfnKind::kMoe:
      specs.SetKind(TrunkKind::kOther);  // routers, f32
      specs.Add(f.router_weight, {c.num_experts, hidden});
      if (!f.router_bias.empty()) specs.Add(f.router_bias, {c.num_experts});
      if (!f.selection_bias.empty()) specs.Add(f.selection_bias, {c.num_experts});
      if (!f.shared_prefix.empty()) {
        specs.SetKind(TrunkKind::kSharedExperts);
        specs.AddMlp(f.shared_prefix, f.mlp, hidden, f.shared_intermediate);
      }
      specs.SetKind(TrunkKind::kOther);
      if (!f.hash_table.empty()) specs.Add(f.hash_table, {c.vocab_size, c.experts_per_token});
      if (f.latent_dim > 0) {
        specs.SetKind(TrunkKind::kLatentProjection);
        specs.Add(f.latent_down, {f.latent_dim, hidden});
        if (!f.latent_norm.empty()) specs.Add(f.latent_norm, {f.latent_dim});
        specs.Add(f.latent_up, {hidden, f.latent_dim});
      }
      return;
  }
}

}  // namespace

ModelPlan PlanOf(const ModelConfig& config) { return FamilyOf(config.arch).Plan(config); }

bool IsPrecisionCritical(const TensorSpec& spec) {
  return spec.shape.size() != 2 || absl::EndsWith(spec.name, ".gate.weight") ||
         absl::EndsWith(spec.name, ".router.weight") ||
         absl::EndsWith(spec.name, "_res_proj.weight") ||  // AttnRes queries
         absl::EndsWith(spec.name, "_fn") ||               // mHC mixes
         absl::EndsWith(spec.name, "ape") ||               // compressor / pool position biases
         absl::EndsWith(spec.name, ".tid2eid");            // expert ids
}

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
    specs.Add(layer.input_norm, {c.hidden_size});
    specs.SetKind(layer.mixer.kind == MixerKind::kKda ? TrunkKind::kLinearAttention
                                                      : TrunkKind::kAttention);
    switch (layer.mixer.kind) {
      case MixerKind::kMla:
        AddMla(c, layer.mixer, specs);
        break;
      case MixerKind::kGqa:
        AddGqa(c, layer.mixer, specs);
        break;
      case MixerKind::kKda:
        AddKda(c, layer.mixer, specs);
        break;
      case MixerKind::kCompressedMqa:
        AddCompressedMqa(c, layer.mixer, specs);
        break;
    }
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
  const MixerKind mixer = layer.mixer.kind;
  return plan.residual == ResidualKind::kPreNorm && layer.ffn.kind == FfnKind::kMoe &&
         layer.ffn.hash_table.empty() &&
         (mixer == MixerKind::kGqa || mixer == MixerKind::kMla || mixer == MixerKind::kKda);
}

std::string EarlyRouteFoldName(const LayerPlan& layer) {
  std::string router = layer.ffn.router_weight;
  if (absl::EndsWith(router, ".weight")) router.resize(router.size() - 7);
  return router + ".o_proj_fold";
}

std::vector<TensorSpec> EarlyRouteFoldSpecs(const ModelConfig& config) {
  const ModelPlan plan = PlanOf(config);
  std::vector<TensorSpec> specs;
  std::unordered_map<std::string, Shape> shapes;
  for (const TensorSpec& spec : TrunkTensorSpecs(config, TensorFormat::kF32)) {
    shapes[spec.name] = spec.shape;
  }
  for (const LayerPlan& layer : plan.layers) {
    if (!HasEarlyRoute(plan, layer)) continue;
    const auto output = shapes.find(layer.mixer.prefix + "o_proj.weight");
    if (output == shapes.end() || output->second.size() != 2) continue;
    specs.push_back({.name = EarlyRouteFoldName(layer),
                     .format = TensorFormat::kF32,
                     .shape = {config.num_experts, output->second[1]}});
  }
  return specs;
}

}  // namespace warp::computed
