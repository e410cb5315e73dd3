#include "computed/engine/transformer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/check.h"
#include "common/compute/expert_math.h"
#include "common/compute/linear.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/store/engine_activity.h"
#include "computed/engine/ffns/dense_mlp.h"
#include "common/store/read_window.h"
#include "computed/engine/stage_timer.h"
#include "computed/model/kinds/moe.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {
namespace {

std::string Shape(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

}  // namespace

Transformer::Transformer(std::shared_ptr<const Container> container, ModelConfig config,
                         ModelPlan plan, std::unique_ptr<TrunkWeights> weights,
                         ExpertSource& experts, ComputeContext& compute, const Options& options)
    : container_(std::move(container)),
      config_(std::move(config)),
      plan_(std::move(plan)),
      weights_(std::move(weights)),
      experts_(experts),
      compute_(compute),
      options_(options) {}

absl::StatusOr<std::unique_ptr<Transformer>> Transformer::Create(
    std::shared_ptr<const Container> container, ExpertSource& experts, ComputeContext& compute,
    const Options& options) {
  const Manifest& manifest = container->manifest();
  WARP_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(manifest.architecture, manifest.config,
                                                             container->ManifestPath().string()));
  ModelPlan plan = PlanOf(config);
  WARP_ASSIGN_OR_RETURN(auto weights, TrunkWeights::Load(*container));
  auto transformer = std::unique_ptr<Transformer>(
      new Transformer(std::move(container), std::move(config), std::move(plan), std::move(weights),
                      experts, compute, options));
  Transformer& t = *transformer;
  if (t.options_.experts_per_token == 0) t.options_.experts_per_token = t.config_.experts_per_token;
  if (t.options_.experts_per_token > t.config_.num_experts) {
    return absl::InvalidArgumentError(absl::StrCat("experts per token ",
                                                   t.options_.experts_per_token, " exceeds the ",
                                                   t.config_.num_experts, " routed experts"));
  }
  if (t.options_.sequences < 1 || t.options_.sequences > kMaxSequences) {
    return absl::InvalidArgumentError(
        absl::StrCat("sequences ", t.options_.sequences, " is outside 1..", kMaxSequences));
  }
  WARP_RETURN_IF_ERROR(t.CheckTensors());
  WARP_RETURN_IF_ERROR(t.BuildLayers());
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
  // A hash layer's table must name routed experts: its ids index the banks.
  for (const LayerPlan& layer : plan_.layers) {
    if (layer.ffn.hash_table.empty()) continue;
    std::span<const float> ids = weights_->Vector(layer.ffn.hash_table);
    for (size_t i = 0; i < ids.size(); ++i) {
      if (!(ids[i] >= 0 && ids[i] < config_.num_experts) || ids[i] != std::floor(ids[i])) {
        return absl::FailedPreconditionError(
            absl::StrCat(where, ": trunk tensor ", layer.ffn.hash_table, ": token ",
                         i / config_.experts_per_token, " routes to expert ", ids[i],
                         ", outside the ", config_.num_experts, " routed experts"));
      }
    }
  }
  const std::vector<TensorSpec> matrices = ExpertMatrixSpecs(config_, TensorFormat::kF32);
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    const BankEntry* bank = container_->manifest().FindBank(layer);
    const bool moe = plan_.layers[layer].ffn.kind == FfnKind::kMoe;
    if (moe != (bank != nullptr)) {
      return absl::FailedPreconditionError(absl::StrCat(
          where, ": layer ", layer, moe ? " is MoE but has no bank" : " is dense but has a bank"));
    }
    if (bank == nullptr) continue;
    bool ok = bank->num_experts == config_.num_experts && bank->matrices.size() == matrices.size();
    for (size_t i = 0; ok && i < matrices.size(); ++i) {
      ok = bank->matrices[i].name == matrices[i].name &&
           bank->matrices[i].shape == matrices[i].shape;
    }
    if (!ok) {
      std::vector<std::string> wanted;
      for (const TensorSpec& m : matrices) wanted.push_back(m.name + " " + Shape(m.shape));
      return absl::FailedPreconditionError(
          absl::StrCat(where, ": bank of layer ", layer, " does not hold ", config_.num_experts,
                       " experts of ", absl::StrJoin(wanted, ", ")));
    }
  }
  return absl::OkStatus();
}

void Transformer::PrefetchEngram(std::span<const int32_t> tokens, uint32_t first_position,
                                 uint32_t sequence) {
  if (engram_reader_) engram_reader_->Prefetch(tokens, first_position, sequence);
}

absl::Status Transformer::BuildEngram() {
  engram_memories_.resize(plan_.layers.size());
  if (config_.engram.layers.empty()) return absl::OkStatus();
  const std::string where = container_->dir().string();
  if (options_.engram_store == nullptr || container_->manifest().engram.size() !=
                                              config_.engram.layers.size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": the model reads an engram memory at engram_layer_ids, and the engine was given "
               "no store of the container's engram tables"));
  }
  const Manifest& manifest = container_->manifest();
  std::string tokenizer;
  for (const char* name : {"tokenizer.json", "tiktoken.model"}) {
    if (manifest.tokenizer && tokenizer.empty() &&
        std::find(manifest.tokenizer->files.begin(), manifest.tokenizer->files.end(), name) !=
            manifest.tokenizer->files.end()) {
      tokenizer = name;
    }
  }
  if (tokenizer.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        where, ": the engram's token map comes from the release's tokenizer, and the container "
               "holds none"));
  }
  WARP_ASSIGN_OR_RETURN(const std::filesystem::path path, container_->ContainedFile(tokenizer));
  WARP_ASSIGN_OR_RETURN(EngramAddressing addressing, LoadEngramAddressing(config_, path));
  engram_reader_ = std::make_unique<EngramReader>(config_, std::move(addressing),
                                                  *options_.engram_store, options_.sequences,
                                                  options_.max_positions);
  for (uint32_t layer = 0; layer < plan_.layers.size(); ++layer) {
    const EngramPlan& engram = plan_.layers[layer].engram;
    if (engram.present()) {
      engram_memories_[layer] = std::make_unique<EngramMemory>(config_, engram, *weights_, compute_);
    }
  }
  return absl::OkStatus();
}

absl::Status Transformer::BuildLayers() {
  WARP_RETURN_IF_ERROR(BuildEngram());
  embed_ = weights_->Matrix(plan_.embed);
  head_ = weights_->Matrix(plan_.head);
  residual_ = ResidualScheme::Create(config_, plan_, *weights_);
  moe_options_ = {.experts_per_token = options_.experts_per_token,
                  .prefetch = options_.prefetch,
                  .cache_records = options_.cache_records,
                  .on_route = options_.on_route,
                  .remote = options_.expert_computer};
  std::vector<const Router*> routers;
  for (const LayerPlan& layer : plan_.layers) {
    routers_.push_back(layer.ffn.kind == FfnKind::kMoe
                           ? std::make_unique<Router>(config_, layer.ffn, *weights_, compute_)
                           : nullptr);
    routers.push_back(routers_.back().get());
  }
  lookahead_ = std::make_unique<Lookahead>(std::move(routers), options_.lookahead,
                                           options_.lookahead_precision, experts_,
                                           options_.lookahead_depth, options_.cache_records);
  sequences_.resize(options_.sequences);
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    for (Sequence& sequence : sequences_) {
      sequence.mixers.push_back(CreateMixer(config_, plan_.layers[layer].mixer, *weights_,
                                            options_.max_positions, compute_, sequence.mixers));
    }
  }
  BuildEarlyRoutes();
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    const LayerPlan& plan = plan_.layers[layer];
    if (plan.ffn.kind == FfnKind::kDenseMlp) {
      const MlpTensors mlp = MlpTensors::Of(plan.ffn.prefix, plan.ffn.mlp, config_.hidden_size,
                                            plan.ffn.intermediate);
      ffns_.push_back(
          std::make_unique<DenseMlp>(*weights_, mlp, plan.ffn.glu, compute_, stats_.seconds_dense));
      continue;
    }
    const BankEntry& bank = *container_->manifest().FindBank(layer);
    WARP_ASSIGN_OR_RETURN(std::unique_ptr<ExpertMath> math,
                          ExpertMath::Create(plan.ffn.expert_math(), bank,
                                             container_->codebooks(), compute_));
    const MoeTensors tensors = MoeTensors::Of(config_, plan.ffn);
    std::optional<DenseMlp> shared;
    if (tensors.shared) {
      shared.emplace(*weights_, *tensors.shared, plan.ffn.glu, compute_, stats_.seconds_dense);
    }
    std::optional<LatentMoe> latent;
    if (tensors.latent_down.present()) {
      latent = LatentMoe{.down = weights_->Matrix(tensors.latent_down),
                         .up = weights_->Matrix(tensors.latent_up),
                         .norm = weights_->Vector(tensors.latent_norm),
                         .eps = config_.rms_norm_eps};
    }
    ffns_.push_back(
        std::make_unique<MoeFfn>(layer, config_.hidden_size, *routers_[layer], std::move(math),
                                 bank, std::move(shared), std::move(latent), experts_, *lookahead_,
                                 early_routes_[layer].get(), compute_, moe_options_, stats_));
  }
  return absl::OkStatus();
}

void Transformer::BuildEarlyRoutes() {
  early_routes_.resize(config_.num_layers);
  if (options_.early_routes == EarlyRoutes::kOff || !options_.prefetch) return;
  const auto start = std::chrono::steady_clock::now();
  uint32_t stored = 0, folded = 0;
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    const LayerPlan& plan = plan_.layers[layer];
    if (!HasEarlyRoute(plan_, plan)) continue;
    const std::optional<TokenMixer::OutputProjection> output =
        sequences_[0].mixers[layer]->output_projection();
    WARP_CHECK(output.has_value());  // HasEarlyRoute names the mixers that have one
    const std::string fold_name = EarlyRouteFoldName(plan);
    std::optional<kernels::MatrixView> fold;
    if (weights_->Find(fold_name) != nullptr) {
      fold = weights_->Matrix(fold_name);
    } else if (options_.early_routes != EarlyRoutes::kFolded) {
      continue;
    }
    early_routes_[layer] = std::make_unique<EarlyRoute>(
        layer, config_.rms_norm_eps, *routers_[layer], *output, weights_->Vector(plan.post_norm),
        options_.experts_per_token, compute_, fold ? &*fold : nullptr);
    ++(fold ? stored : folded);
  }
  if (stored + folded > 0) {
    Logger("computed")
        .debug("early routes of {} layers, {} of them folded here in {:.2f} s", stored + folded,
               folded,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

uint32_t Transformer::Rewind(uint32_t position, uint32_t sequence) {
  Sequence& s = sequences_[sequence];
  // Until every layer agrees: a recurrent state restored to its checkpoint
  // must go further back when another layer can only continue from earlier.
  uint32_t target = std::min(s.position, position);
  for (;;) {
    uint32_t reached = target;
    for (const auto& mixer : s.mixers) reached = std::min(reached, mixer->state().Rewind(target));
    if (reached == target) break;
    target = reached;
  }
  s.position = target;
  return s.position;
}

void Transformer::Checkpoint(uint32_t sequence) {
  for (const auto& mixer : sequences_[sequence].mixers) mixer->state().Checkpoint();
}

namespace {

// The fields of one sequence, in the order they are written.
void ArchiveSequence(StateArchive& archive, uint32_t& position,
                     std::vector<std::unique_ptr<TokenMixer>>& mixers, EngramReader* engram,
                     uint32_t sequence) {
  archive.U32(position);
  for (const auto& mixer : mixers) {
    if (!archive.ok()) return;
    mixer->state().Archive(archive);
  }
  if (engram != nullptr && archive.ok()) engram->ArchiveHistory(sequence, position, archive);
}

}  // namespace

std::string Transformer::SaveSequence(uint32_t sequence) {
  std::string out;
  StateArchive archive = StateArchive::Writer(&out);
  Sequence& s = sequences_[sequence];
  ArchiveSequence(archive, s.position, s.mixers, engram_reader_.get(), sequence);
  return out;
}

absl::Status Transformer::LoadSequence(std::string_view state, uint32_t sequence) {
  Sequence& s = sequences_[sequence];
  // An empty state to go back to if `state` turns out bad halfway (fields
  // already read would be half of another state).
  Rewind(0, sequence);
  const std::string empty = SaveSequence(sequence);
  StateArchive archive = StateArchive::Reader(state);
  ArchiveSequence(archive, s.position, s.mixers, engram_reader_.get(), sequence);
  if (archive.ok() && s.position > options_.max_positions) {
    archive.Refuse(absl::StrCat("position ", s.position, " past the context's ",
                                options_.max_positions));
  }
  absl::Status status = archive.Finish();
  if (!status.ok()) {
    StateArchive back = StateArchive::Reader(empty);
    ArchiveSequence(back, s.position, s.mixers, engram_reader_.get(), sequence);
  }
  return status;
}

void Transformer::IssueCertainReads(std::span<const int32_t> tokens) {
  for (uint32_t layer = 0; layer < routers_.size(); ++layer) {
    const Router* router = routers_[layer].get();
    if (router == nullptr || !router->hashed()) continue;
    std::vector<ExpertKey> keys;
    std::vector<bool> seen(router->num_experts(), false);
    for (int32_t token : tokens) {
      for (float expert : router->HashedExperts(token)) {
        if (!seen[static_cast<uint32_t>(expert)])
          keys.push_back({layer, static_cast<uint32_t>(expert)});
        seen[static_cast<uint32_t>(expert)] = true;
      }
    }
    const std::span<const ExpertKey> first = FirstWave(keys, options_.cache_records);
    stats_.certain_reads += first.size();
    experts_.Prefetch(first, Priority::kCertain);
  }
}

uint64_t Transformer::StateBytes() const {
  uint64_t bytes = 0;
  for (const Sequence& sequence : sequences_) {
    for (const auto& mixer : sequence.mixers) bytes += mixer->state().bytes();
  }
  return bytes;
}

absl::Status Transformer::CheckFinite(std::span<const float> values, uint64_t width, uint32_t layer,
                                      std::string_view sublayer,
                                      std::span<const uint32_t> positions) const {
  for (size_t i = 0; i < values.size(); ++i) {
    if (std::isfinite(values[i])) continue;
    const std::string where = sublayer == "head"
                                  ? std::string("the output head")
                                  : absl::StrCat("layer ", layer, "'s ", std::string(sublayer));
    return absl::DataLossError(
        absl::StrCat(container_->dir().string(), ": ", where, " computed ", values[i],
                     " at position ", positions[i / width],
                     ": its weights or config values are out of range; no token was "
                     "sampled from it"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Transformer::Forward(std::span<const int32_t> tokens,
                                                        Logits logits, uint32_t sequence) {
  const SequenceChunk chunk{.sequence = sequence, .tokens = tokens, .logits = logits};
  WARP_ASSIGN_OR_RETURN(std::vector<std::vector<float>> rows, ForwardBatch({&chunk, 1}));
  return std::move(rows[0]);
}

absl::Status Transformer::CheckChunks(std::span<const SequenceChunk> chunks) const {
  if (chunks.empty()) return absl::InvalidArgumentError("a forward pass of no chunk");
  std::vector<bool> taken(sequences_.size(), false);
  for (const SequenceChunk& chunk : chunks) {
    if (chunk.sequence >= sequences_.size() || taken[chunk.sequence]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sequence ", chunk.sequence,
          chunk.sequence >= sequences_.size() ? " does not exist (of " : " appears twice (of ",
          sequences_.size(), ")"));
    }
    taken[chunk.sequence] = true;
    const uint32_t position = sequences_[chunk.sequence].position;
    if (chunk.tokens.empty()) return absl::InvalidArgumentError("a chunk of no token");
    if (position + chunk.tokens.size() > options_.max_positions) {
      return absl::OutOfRangeError(absl::StrCat("context full: ", position, " + ",
                                                chunk.tokens.size(), " tokens exceed ",
                                                options_.max_positions));
    }
    for (size_t t = 0; t < chunk.tokens.size(); ++t) {
      if (chunk.tokens[t] < 0 || static_cast<uint64_t>(chunk.tokens[t]) >= config_.vocab_size) {
        return absl::InvalidArgumentError(absl::StrCat("token ", chunk.tokens[t], " at index ", t,
                                                       " is outside the vocabulary of ",
                                                       config_.vocab_size));
      }
    }
  }
  return absl::OkStatus();
}

void Transformer::RunMixers(uint32_t layer, std::span<const SequenceChunk> chunks,
                            std::span<const uint32_t> begins, std::span<const uint32_t> positions,
                            std::span<const float> x, std::span<float> delta, EarlyRoute* early) {
  StageTimer timer(stats_.seconds_attention);
  const uint64_t hidden = config_.hidden_size;
  for (size_t c = 0; c < chunks.size(); ++c) {
    TokenMixer& mixer = *sequences_[chunks[c].sequence].mixers[layer];
    if (early != nullptr) {
      mixer.set_before_output([&, first = begins[c]](std::span<const float> a, uint32_t m) {
        const std::vector<ExpertKey> keys = early->Predict(a, first, m);
        experts_.Prefetch(FirstWave(keys, options_.cache_records), Priority::kCertain);
      });
    }
    const uint64_t rows = chunks[c].tokens.size(), begin = begins[c] * hidden;
    mixer.Forward(x.subspan(begin, rows * hidden), static_cast<uint32_t>(rows),
                  positions[begins[c]], delta.subspan(begin, rows * hidden));
    if (early != nullptr) mixer.set_before_output(nullptr);
  }
}

absl::StatusOr<std::vector<std::vector<float>>> Transformer::ForwardBatch(
    std::span<const SequenceChunk> chunks) {
  WARP_RETURN_IF_ERROR(CheckChunks(chunks));
  const uint64_t hidden = config_.hidden_size;
  // The pass's tokens, chunk after chunk; begins[c]: chunk c's first row.
  std::vector<int32_t> ids;
  std::vector<uint32_t> positions, sequence_of, begins;
  for (const SequenceChunk& chunk : chunks) {
    begins.push_back(static_cast<uint32_t>(ids.size()));
    const uint32_t first = sequences_[chunk.sequence].position;
    for (uint32_t t = 0; t < chunk.tokens.size(); ++t) {
      ids.push_back(chunk.tokens[t]);
      positions.push_back(first + t);
      sequence_of.push_back(chunk.sequence);
    }
  }
  const uint32_t n = static_cast<uint32_t>(ids.size());
  const PassTokens pass{.ids = ids, .positions = positions, .sequences = sequence_of};
  // A prefill pass: the embedded stores' prefault pauses while it computes.
  std::optional<EngineActivity::Prefill> prefill;
  if (std::any_of(chunks.begin(), chunks.end(),
                  [](const SequenceChunk& chunk) { return chunk.tokens.size() > 1; })) {
    prefill.emplace();
  }
  if (options_.certain) IssueCertainReads(ids);
  if (engram_reader_) engram_reader_->Begin(ids, positions, sequence_of);  // before layer 0
  std::vector<float> embeddings(n * hidden), x(n * hidden), delta(n * hidden);
  {
    StageTimer timer(stats_.seconds_head);
    for (uint32_t t = 0; t < n; ++t) {
      kernels::DequantizeRow(embed_, ids[t], {&embeddings[t * hidden], hidden});
    }
  }
  residual_->Begin(std::move(embeddings), n);
  for (uint32_t layer = 0; layer < config_.num_layers; ++layer) {
    if (lookahead_->Predicts(layer)) {  // the disk reads guesses while the attention computes
      StageTimer timer(stats_.seconds_route);
      residual_->EstimateFfnInput(layer, x);
      lookahead_->Hint(layer, x, ids);
    }
    if (engram_memories_[layer]) {
      StageTimer timer(stats_.seconds_attention);
      std::vector<float> rows;
      WARP_RETURN_IF_ERROR(engram_reader_->Rows(plan_.layers[layer].engram.table, rows, stats_));
      engram_memories_[layer]->Apply(rows, n, residual_->streams());
    }
    residual_->SublayerInput(layer, Sublayer::kMixer, x);
    EarlyRoute* early = early_routes_[layer] != nullptr && early_routes_[layer]->Wanted()
                            ? early_routes_[layer].get()
                            : nullptr;
    if (early != nullptr) early->Begin(residual_->stream(), n);
    RunMixers(layer, chunks, begins, positions, x, delta, early);
    WARP_RETURN_IF_ERROR(CheckFinite(delta, hidden, layer, "attention", positions));
    residual_->AddSublayerOutput(layer, Sublayer::kMixer, delta);
    if (early != nullptr) early->End(residual_->stream());
    residual_->SublayerInput(layer, Sublayer::kFfn, x);
    WARP_RETURN_IF_ERROR(ffns_[layer]->Forward(x, pass, delta));
    WARP_RETURN_IF_ERROR(CheckFinite(delta, hidden, layer, "MLP", positions));
    residual_->AddSublayerOutput(layer, Sublayer::kFfn, delta);
  }
  StageTimer head_timer(stats_.seconds_head);  // to the end of the pass
  // The head over every row asked for, in one pass (its weights read once
  // for the batch): its rows are independent and the kernels give the same
  // bits for any batch size, so a last row alone equals the last row of all.
  std::vector<uint32_t> head_rows;
  std::vector<size_t> chunk_rows;  // how many of head_rows each chunk asked for
  for (size_t c = 0; c < chunks.size(); ++c) {
    const uint32_t n_chunk = static_cast<uint32_t>(chunks[c].tokens.size());
    const uint32_t first = chunks[c].logits == Logits::kEvery  ? 0
                           : chunks[c].logits == Logits::kLast ? n_chunk - 1
                                                               : n_chunk;
    for (uint32_t t = first; t < n_chunk; ++t) head_rows.push_back(begins[c] + t);
    chunk_rows.push_back(n_chunk - first);
  }
  const uint64_t vocab = config_.vocab_size;
  std::vector<float> head_out(head_rows.size() * vocab);
  if (!head_rows.empty()) {
    residual_->FinalInput(x);
    std::vector<float> head_in(head_rows.size() * hidden);
    std::vector<uint32_t> head_positions;
    for (size_t r = 0; r < head_rows.size(); ++r) {
      std::copy_n(&x[head_rows[r] * hidden], hidden, &head_in[r * hidden]);
      head_positions.push_back(positions[head_rows[r]]);
    }
    Linear(compute_, head_, head_in.data(), static_cast<uint32_t>(head_rows.size()), head_out.data());
    WARP_RETURN_IF_ERROR(CheckFinite(head_out, vocab, config_.num_layers, "head", head_positions));
    stats_.head_rows += head_rows.size();
  }
  std::vector<std::vector<float>> logits(chunks.size());
  size_t next = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    logits[c].assign(head_out.begin() + next * vocab,
                     head_out.begin() + (next + chunk_rows[c]) * vocab);
    next += chunk_rows[c];
  }
  for (const SequenceChunk& chunk : chunks) {
    sequences_[chunk.sequence].position += static_cast<uint32_t>(chunk.tokens.size());
  }
  stats_.tokens += n;
  return logits;
}

}  // namespace warp::computed
