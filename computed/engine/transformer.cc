#include "computed/engine/transformer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "computed/engine/linear.h"
#include "computed/engine/ops.h"
#include "computed/engine/router.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {
namespace {

kernels::MatrixView RecordMatrix(const ExpertRecord& record, const TensorEntry& matrix) {
  const std::byte* base = record.bytes().data();
  return kernels::MatrixView{.format = matrix.format,
                             .rows = matrix.shape[0],
                             .cols = matrix.shape[1],
                             .data = base + matrix.data.offset,
                             .scale = matrix.scale ? base + matrix.scale->offset : nullptr};
}

std::string Shape(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

Transformer::Transformer(std::shared_ptr<const Container> container, ModelConfig config,
                         std::unique_ptr<TrunkWeights> weights, ExpertSource& experts,
                         ThreadPool& pool, const Options& options)
    : container_(std::move(container)),
      config_(std::move(config)),
      weights_(std::move(weights)),
      experts_(experts),
      pool_(pool),
      options_(options) {}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(
    std::shared_ptr<const Container> container, ExpertSource& experts, ThreadPool& pool,
    const Options& options) {
  const Manifest& manifest = container->manifest();
  WARP_ASSIGN_OR_RETURN(ModelConfig config,
                        ParseModelConfig(manifest.architecture, manifest.config));
  WARP_ASSIGN_OR_RETURN(auto weights, TrunkWeights::Load(*container));
  auto transformer = std::unique_ptr<Transformer>(new Transformer(
      std::move(container), std::move(config), std::move(weights), experts, pool, options));
  Transformer& t = *transformer;
  if (t.options_.experts_per_token == 0) t.options_.experts_per_token = t.config_.experts_per_token;
  if (t.options_.experts_per_token > t.config_.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat("experts per token ",
                                                   t.options_.experts_per_token, " exceeds the ",
                                                   t.config_.num_experts, " routed experts"));
  }
  WARP_RETURN_IF_ERROR(t.CheckTensors());
  for (uint32_t layer = 0; layer < t.config_.num_layers; ++layer) {
    t.attention_.push_back(
        Attention::Create(t.config_, *t.weights_, layer, t.options_.max_positions, pool));
  }
  return transformer;
}

absl::Status Transformer::CheckTensors() const {
  const std::string where = container_->dir().string();
  for (const TensorSpec& spec : TrunkTensorSpecs(config_, TensorFormat::kF32)) {
    const TensorEntry* tensor = weights_->Find(spec.name);
    if (tensor == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": trunk tensor ", spec.name, " is missing"));
    }
    if (tensor->shape != spec.shape) {
      return absl::FailedPreconditionError(absl::StrCat(where, ": trunk tensor ", spec.name,
                                                        " has shape ", Shape(tensor->shape),
                                                        ", the config needs ", Shape(spec.shape)));
    }
    if (spec.shape.size() == 1 && tensor->format != TensorFormat::kF32) {
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": trunk tensor ", spec.name, " must be f32"));
    }
  }
  const std::vector<TensorSpec> matrices = ExpertMatrixSpecs(config_, TensorFormat::kF32);
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    const BankEntry* bank = container_->manifest().FindBank(layer);
    if (config_.IsMoeLayer(layer) != (bank != nullptr)) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": layer ", layer, config_.IsMoeLayer(layer) ? " is MoE but has no bank"
                                                              : " is dense but has a bank"));
    }
    if (bank == nullptr) continue;
    bool ok = bank->num_experts == config_.num_experts && bank->matrices.size() == matrices.size();
    for (size_t i = 0; ok && i < matrices.size(); ++i) {
      ok = bank->matrices[i].name == matrices[i].name &&
           bank->matrices[i].shape == matrices[i].shape;
    }
    if (!ok) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": bank of layer ", layer, " does not hold ", config_.num_experts,
          " experts of gate/up/down ", Shape(matrices[0].shape), " ", Shape(matrices[2].shape)));
    }
  }
  return absl::OkStatus();
}

void Transformer::Mlp(const std::string& prefix, std::span<const float> x, uint32_t n,
                      uint64_t intermediate, std::span<float> out) {
  std::vector<float> gate(n * intermediate), up(n * intermediate);
  Linear(pool_, weights_->Matrix(prefix + ".gate_proj.weight"), x.data(), n, gate.data());
  Linear(pool_, weights_->Matrix(prefix + ".up_proj.weight"), x.data(), n, up.data());
  SiluMul(gate, up);
  Linear(pool_, weights_->Matrix(prefix + ".down_proj.weight"), gate.data(), n, out.data());
}

absl::Status Transformer::Moe(uint32_t layer, std::span<const float> x, uint32_t n,
                              std::span<float> out) {
  const uint64_t hidden = config_.hidden_size;
  const uint32_t num_experts = config_.num_experts;
  std::vector<float> logits(uint64_t{n} * num_experts);
  Linear(pool_, weights_->Matrix(RouterName(config_, layer)), x.data(), n, logits.data());
  std::span<const float> bias;
  if (config_.router == RouterKind::kSigmoidGroupTopK) {
    bias = weights_->Vector(absl::StrCat("model.layers.", layer, ".mlp.gate.e_score_correction_bias"));
  }
  // Route every token, then read the union of their experts once.
  std::vector<Routing> routings;
  std::vector<ExpertKey> keys;
  std::vector<int32_t> key_of_expert(num_experts, -1);
  for (uint32_t t = 0; t < n; ++t) {
    routings.push_back(Route(config_, {&logits[uint64_t{t} * num_experts], num_experts}, bias,
                             options_.experts_per_token));
    for (uint32_t expert : routings.back().experts) {
      if (key_of_expert[expert] >= 0) continue;
      key_of_expert[expert] = static_cast<int32_t>(keys.size());
      keys.push_back({layer, expert});
    }
  }
  std::vector<absl::StatusOr<ExpertRecord>> records = experts_.ReadAll(keys);
  for (const auto& record : records) {
    if (!record.ok()) return record.status();
    ++stats_.expert_reads;
    stats_.expert_read_bytes += record->record_bytes;
  }
  // Each expert runs over all of its tokens at once; outputs[u] is [tokens of u][hidden].
  const BankEntry& bank = *container_->manifest().FindBank(layer);
  const uint64_t inter = config_.moe_intermediate_size;
  std::vector<std::vector<float>> outputs(keys.size());
  std::vector<std::vector<uint32_t>> tokens_of(keys.size());
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t expert : routings[t].experts) tokens_of[key_of_expert[expert]].push_back(t);
  }
  for (size_t u = 0; u < keys.size(); ++u) {
    const uint32_t m = static_cast<uint32_t>(tokens_of[u].size());
    std::vector<float> xs(m * hidden), gate(m * inter), up(m * inter);
    for (uint32_t i = 0; i < m; ++i) {
      std::copy_n(&x[tokens_of[u][i] * hidden], hidden, &xs[i * hidden]);
    }
    Linear(pool_, RecordMatrix(*records[u], bank.matrices[0]), xs.data(), m, gate.data());
    Linear(pool_, RecordMatrix(*records[u], bank.matrices[1]), xs.data(), m, up.data());
    SiluMul(gate, up);
    outputs[u].resize(m * hidden);
    Linear(pool_, RecordMatrix(*records[u], bank.matrices[2]), gate.data(), m, outputs[u].data());
    stats_.expert_uses += m;
  }
  // Combine in routing-rank order, whatever order the records arrived in.
  std::fill(out.begin(), out.begin() + n * hidden, 0.0f);
  std::vector<uint32_t> next_row(keys.size(), 0);
  for (uint32_t t = 0; t < n; ++t) {
    for (size_t k = 0; k < routings[t].experts.size(); ++k) {
      const int32_t u = key_of_expert[routings[t].experts[k]];
      const float* y = &outputs[u][next_row[u]++ * hidden];
      const float w = routings[t].weights[k];
      for (uint64_t i = 0; i < hidden; ++i) out[t * hidden + i] += w * y[i];
    }
  }
  if (config_.num_shared_experts > 0) {
    std::vector<float> shared(n * hidden);
    Mlp(absl::StrCat("model.layers.", layer, ".mlp.shared_experts"), x, n,
        inter * config_.num_shared_experts, shared);
    for (uint64_t i = 0; i < n * hidden; ++i) out[i] += shared[i];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Transformer::Forward(std::span<const int32_t> tokens) {
  const uint32_t n = static_cast<uint32_t>(tokens.size());
  const uint64_t hidden = config_.hidden_size;
  if (position_ + n > options_.max_positions) {
    return absl::OutOfRangeError(absl::StrCat("context full: ", position_, " + ", n,
                                              " tokens exceed ", options_.max_positions));
  }
  const kernels::MatrixView embed = weights_->Matrix("model.embed_tokens.weight");
  std::vector<float> h(n * hidden), x(n * hidden), delta(n * hidden);
  for (uint32_t t = 0; t < n; ++t) {
    if (tokens[t] < 0 || static_cast<uint64_t>(tokens[t]) >= config_.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("token ", tokens[t], " at index ", t,
                                                     " is outside the vocabulary of ",
                                                     config_.vocab_size));
    }
    kernels::DequantizeRow(embed, tokens[t], {&h[t * hidden], hidden});
  }
  auto norm_rows = [&](const std::string& name) {
    std::span<const float> weight = weights_->Vector(name);
    for (uint32_t t = 0; t < n; ++t) {
      RmsNorm({&h[t * hidden], hidden}, weight, config_.rms_norm_eps, {&x[t * hidden], hidden});
    }
  };
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    const std::string prefix = absl::StrCat("model.layers.", layer, ".");
    norm_rows(prefix + "input_layernorm.weight");
    attention_[layer]->Forward(x, n, position_, delta);
    for (uint64_t i = 0; i < n * hidden; ++i) h[i] += delta[i];
    norm_rows(prefix + "post_attention_layernorm.weight");
    if (config_.IsMoeLayer(layer)) {
      WARP_RETURN_IF_ERROR(Moe(layer, x, n, delta));
    } else {
      Mlp(prefix + "mlp", x, n, config_.intermediate_size, delta);
    }
    for (uint64_t i = 0; i < n * hidden; ++i) h[i] += delta[i];
  }
  norm_rows("model.norm.weight");
  const kernels::MatrixView head = weights_->Matrix(
      config_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  std::vector<float> logits(uint64_t{n} * config_.vocab_size);
  Linear(pool_, head, x.data(), n, logits.data());
  position_ += n;
  stats_.tokens += n;
  return logits;
}

}  // namespace warp::computed
