#include "computed/engine/transformer.h"

#include <algorithm>
#include <chrono>

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
  t.predicted_.resize(t.config_.num_layers);
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
          where, ": layer ", layer,
          config_.IsMoeLayer(layer) ? " is MoE but has no bank" : " is dense but has a bank"));
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

std::vector<Routing> Transformer::RouteTokens(uint32_t layer, std::span<const float> x, uint32_t n,
                                              uint32_t top_k) {
  const uint32_t num_experts = config_.num_experts;
  std::vector<float> logits(uint64_t{n} * num_experts);
  Linear(pool_, weights_->Matrix(RouterName(config_, layer)), x.data(), n, logits.data());
  std::span<const float> bias;
  if (config_.router == RouterKind::kSigmoidGroupTopK) {
    bias =
        weights_->Vector(absl::StrCat("model.layers.", layer, ".mlp.gate.e_score_correction_bias"));
  }
  std::vector<Routing> routings;
  for (uint32_t t = 0; t < n; ++t) {
    routings.push_back(
        Route(config_, {&logits[uint64_t{t} * num_experts], num_experts}, bias, top_k));
  }
  return routings;
}

void Transformer::Lookahead(uint32_t layer, std::span<const float> x, uint32_t n) {
  uint32_t next = layer + 1;
  while (next < config_.num_layers && !config_.IsMoeLayer(next)) ++next;
  if (options_.lookahead == 0 || next >= config_.num_layers) return;
  const uint32_t top_n = std::min(options_.lookahead, config_.num_experts);
  std::vector<Routing> routings = RouteTokens(next, x, n, top_n);
  std::vector<ExpertKey> keys;
  std::vector<bool> seen(config_.num_experts, false);
  predicted_[next].clear();
  for (const Routing& routing : routings) {
    predicted_[next].push_back(routing.experts);
    stats_.lookahead_predicted += routing.experts.size();
    for (uint32_t expert : routing.experts) {
      if (!seen[expert]) keys.push_back({next, expert});
      seen[expert] = true;
    }
  }
  experts_.Prefetch(keys, Priority::kLookahead);
}

void Transformer::RunExpert(const ExpertRecord& record, const BankEntry& bank,
                            std::span<const float> x, const std::vector<uint32_t>& tokens,
                            std::vector<float>& out) {
  const uint64_t hidden = config_.hidden_size;
  const uint64_t inter = config_.moe_intermediate_size;
  const uint32_t m = static_cast<uint32_t>(tokens.size());
  std::vector<float> xs(m * hidden), gate(m * inter), up(m * inter);
  for (uint32_t i = 0; i < m; ++i) std::copy_n(&x[tokens[i] * hidden], hidden, &xs[i * hidden]);
  Linear(pool_, RecordMatrix(record, bank.matrices[0]), xs.data(), m, gate.data());
  Linear(pool_, RecordMatrix(record, bank.matrices[1]), xs.data(), m, up.data());
  SiluMul(gate, up);
  out.resize(m * hidden);
  Linear(pool_, RecordMatrix(record, bank.matrices[2]), gate.data(), m, out.data());
  stats_.expert_uses += m;
}

absl::Status Transformer::Moe(uint32_t layer, std::span<const float> x, uint32_t n,
                              std::span<float> out) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  const uint64_t hidden = config_.hidden_size;
  const BankEntry& bank = *container_->manifest().FindBank(layer);
  auto start = Clock::now();
  std::vector<Routing> routings = RouteTokens(layer, x, n, options_.experts_per_token);
  // The union of the chunk's experts, each read once.
  std::vector<ExpertKey> keys;
  std::vector<int32_t> key_of_expert(config_.num_experts, -1);
  std::vector<std::vector<uint32_t>> tokens_of;
  for (uint32_t t = 0; t < n; ++t) {
    for (uint32_t expert : routings[t].experts) {
      if (key_of_expert[expert] < 0) {
        key_of_expert[expert] = static_cast<int32_t>(keys.size());
        keys.push_back({layer, expert});
        tokens_of.emplace_back();
      }
      tokens_of[key_of_expert[expert]].push_back(t);
    }
    stats_.token_by_token_bytes += routings[t].experts.size() * bank.record_bytes;
    if (options_.on_route) options_.on_route(position_ + t, layer, routings[t].experts);
  }
  stats_.expert_reads += keys.size();
  stats_.expert_read_bytes += keys.size() * bank.record_bytes;
  if (!predicted_[layer].empty() && predicted_[layer].size() == n) {
    std::vector<bool> used(config_.num_experts, false);
    std::vector<bool> hinted(config_.num_experts, false);
    for (uint32_t t = 0; t < n; ++t) {
      for (uint32_t expert : predicted_[layer][t]) hinted[expert] = true;
      for (uint32_t expert : routings[t].experts) {
        used[expert] = true;
        ++stats_.lookahead_routed;
        stats_.lookahead_hits +=
            std::count(predicted_[layer][t].begin(), predicted_[layer][t].end(), expert);
      }
    }
    for (uint32_t e = 0; e < config_.num_experts; ++e) {
      if (hinted[e] && !used[e]) stats_.lookahead_wasted_bytes += bank.record_bytes;
    }
  }
  predicted_[layer].clear();
  stats_.seconds_route += seconds_since(start);

  std::vector<std::vector<float>> outputs(keys.size());
  std::vector<float> shared;
  const uint64_t inter = config_.moe_intermediate_size;
  auto run_shared = [&] {
    if (config_.num_shared_experts == 0) return;
    start = Clock::now();
    shared.resize(n * hidden);
    Mlp(absl::StrCat("model.layers.", layer, ".mlp.shared_experts"), x, n,
        inter * config_.num_shared_experts, shared);
    stats_.seconds_dense += seconds_since(start);
  };
  if (options_.prefetch) {
    // Demand reads fly while the shared expert and the lookahead are computed;
    // each expert is computed as its record lands, in whatever order.
    std::shared_ptr<ReadBatch> batch = experts_.Read(keys, Priority::kDemand);
    run_shared();
    Lookahead(layer, x, n);
    while (true) {
      start = Clock::now();
      auto next = batch->Next();
      stats_.seconds_fetch_wait += seconds_since(start);
      if (!next) break;
      if (!next->second.ok()) return next->second.status();
      start = Clock::now();
      RunExpert(*next->second, bank, x, tokens_of[next->first], outputs[next->first]);
      stats_.seconds_expert += seconds_since(start);
    }
  } else {
    start = Clock::now();
    std::vector<absl::StatusOr<ExpertRecord>> records = experts_.ReadAll(keys);
    stats_.seconds_fetch_wait += seconds_since(start);
    start = Clock::now();
    for (size_t u = 0; u < keys.size(); ++u) {
      if (!records[u].ok()) return records[u].status();
      RunExpert(*records[u], bank, x, tokens_of[u], outputs[u]);
    }
    stats_.seconds_expert += seconds_since(start);
    run_shared();
  }
  // Combine in routing-rank order, whatever order the records arrived in,
  // then add the shared experts: the same sums on every path.
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
  for (uint64_t i = 0; i < shared.size(); ++i) out[i] += shared[i];
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Transformer::Forward(std::span<const int32_t> tokens,
                                                        bool last_only) {
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
    auto start = std::chrono::steady_clock::now();
    attention_[layer]->Forward(x, n, position_, delta);
    stats_.seconds_attention +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (uint64_t i = 0; i < n * hidden; ++i) h[i] += delta[i];
    norm_rows(prefix + "post_attention_layernorm.weight");
    if (config_.IsMoeLayer(layer)) {
      WARP_RETURN_IF_ERROR(Moe(layer, x, n, delta));
    } else {
      start = std::chrono::steady_clock::now();
      Mlp(prefix + "mlp", x, n, config_.intermediate_size, delta);
      stats_.seconds_dense +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    for (uint64_t i = 0; i < n * hidden; ++i) h[i] += delta[i];
  }
  norm_rows("model.norm.weight");
  const kernels::MatrixView head = weights_->Matrix(
      config_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  // The head's rows are independent and the kernels give the same bits for
  // any batch size, so the last row alone equals the last row of all.
  const uint32_t rows = last_only ? 1 : n;
  std::vector<float> logits(uint64_t{rows} * config_.vocab_size);
  Linear(pool_, head, x.data() + uint64_t{n - rows} * hidden, rows, logits.data());
  position_ += n;
  stats_.tokens += n;
  return logits;
}

}  // namespace warp::computed
