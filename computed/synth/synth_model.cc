#include "computed/synth/synth_model.h"

#include <cmath>
#include <string>
#include <thread>
#include <unordered_map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/format/container_writer.h"
#include "common/hash.h"
#include "common/io/file.h"
#include "common/logging.h"
#include "common/progress.h"
#include "common/status.h"
#include "computed/convert/early_route_folds.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"
#include "computed/model/trunk_choice.h"
#include "computed/synth/presets.h"
#include "computed/synth/random_fill.h"
#include "computed/synth/synth_engram.h"
#include "computed/synth/synth_tokenizer.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSynthTokenizerFile = "tokenizer.json";

constexpr float kEmbeddingAmplitude = 4.0f;  // U(-4, 4): RMS 2.3 against layers' ~1

// Value ranges that keep activations near unit scale: matrices U(-a, a) with
// a = sqrt(3 / in_features), so each output has about the variance of one
// input; the router the same, so its logits spread with std ~1 and tokens
// pick different experts; norms near 1.
FillSpec TrunkFill(const TensorSpec& spec, const ModelConfig& model) {
  FillSpec fill{.format = spec.format, .shape = spec.shape};
  if (absl::EndsWith(spec.name, ".tid2eid")) {  // a hash layer's expert ids
    fill.integers = model.num_experts;
  } else if (absl::EndsWith(spec.name, "bias")) {
    // Zero-centred: a bias of ~1 on every layer's output (gpt-oss's o_proj) is
    // the same vector in every token's stream, and routing collapses onto it.
    fill.amplitude = 0.1f;
  } else if (spec.shape.size() == 1) {
    fill.center = 1.0f;
    fill.amplitude = 0.1f;
  } else if (absl::EndsWith(spec.name, "embed_tokens.weight") || spec.name == "embed.weight") {
    // Token identity dominates the stream, as in a trained model: every layer
    // adds a unit-scale output, and attention's is an average over positions,
    // much the same for every token. With embeddings of that scale, routing
    // concentrated with depth (qwen3_moe/tiny: 12 of 16 experts by layer 3
    // over 32 tokens; SynthRoutingTest).
    fill.amplitude = kEmbeddingAmplitude;
  } else {
    fill.amplitude = std::sqrt(3.0f / static_cast<float>(spec.shape[1]));
  }
  return fill;
}

FillSpec ExpertFill(const TensorEntry& matrix) {
  if (matrix.shape.size() == 1) {  // a bias (gpt-oss): zero-centred, small
    return FillSpec{.format = matrix.format, .shape = matrix.shape, .amplitude = 0.1f};
  }
  return FillSpec{.format = matrix.format,
                  .shape = matrix.shape,
                  .amplitude = std::sqrt(3.0f / static_cast<float>(matrix.shape[1]))};
}

// Fills bytes [offset, offset + out.size()) of a sub-tensor with `fill`, on
// two threads when there is enough to share: one core fills bf16 at ~1.3 GB/s,
// less than the disk takes.
void FillInParallel(uint64_t offset, std::span<std::byte> out,
                    const ContainerWriter::ChunkFiller& fill) {
  constexpr size_t kMinParallelBytes = 1 << 20;
  if (out.size() < kMinParallelBytes) {
    fill(offset, out);
    return;
  }
  const size_t half = out.size() / 2 / 64 * 64;
  std::jthread helper([&] { fill(offset + half, out.subspan(half)); });
  fill(offset, out.first(half));
}

std::string SourceLine(const SynthOptions& options, TensorFormat experts, TensorFormat trunk) {
  std::string line =
      absl::StrCat("computed synth --arch ", options.arch, " --preset ", options.preset, " --seed ",
                   options.seed, " --experts ", std::string(TensorFormatName(experts)), " --trunk ",
                   options.trunk_choice.value_or(std::string(TensorFormatName(trunk))));
  if (options.target_bytes) absl::StrAppend(&line, " --size ", *options.target_bytes);
  return line;
}

absl::Status WriteTrunk(ContainerWriter& writer, const std::vector<TensorSpec>& specs,
                        const ModelConfig& model, uint64_t seed, ProgressBar& progress) {
  for (const TensorSpec& spec : specs) {
    const FillSpec fill = TrunkFill(spec, model);
    const uint64_t stream = StreamKey(seed, spec.name);
    auto data = [&](uint64_t offset, std::span<std::byte> out) {
      FillInParallel(offset, out, [&](uint64_t o, std::span<std::byte> part) {
        FillData(fill, stream, o, part);
      });
    };
    auto scale = [&](uint64_t offset, std::span<std::byte> out) {
      FillScale(fill, stream, offset, out);
    };
    const uint64_t before = writer.manifest().trunk_bytes;
    WARP_RETURN_IF_ERROR(writer.AddTrunkTensor(spec, data, scale));
    progress.Advance(writer.manifest().trunk_bytes - before);
  }
  return absl::OkStatus();
}

// A trunk tensor's bytes as WriteTrunk wrote them, for the early routes' folds.
absl::StatusOr<StoredTensor> StoredTrunk(const TensorSpec& spec, const ModelConfig& model,
                                         uint64_t seed) {
  const FillSpec fill = TrunkFill(spec, model);
  const uint64_t stream = StreamKey(seed, spec.name);
  StoredTensor stored{.spec = spec};
  stored.data.resize(DataBytes(spec.format, spec.shape));
  stored.scale.resize(ScaleBytes(spec.format, spec.shape));
  FillInParallel(0, stored.data, [&](uint64_t offset, std::span<std::byte> part) {
    FillData(fill, stream, offset, part);
  });
  if (!stored.scale.empty()) FillScale(fill, stream, 0, stored.scale);
  return stored;
}

absl::Status WriteBanks(ContainerWriter& writer, const ModelConfig& model, TensorFormat format,
                        uint64_t seed, ProgressBar& progress) {
  const std::vector<TensorSpec> specs = ExpertMatrixSpecs(model, format);
  for (uint32_t layer = 0; layer < model.num_layers; ++layer) {
    if (!model.IsMoeLayer(layer)) continue;
    const BankEntry bank = LayoutBank(layer, model.num_experts, specs);
    WARP_RETURN_IF_ERROR(writer.BeginBank(bank));
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      std::span<std::byte> record = writer.NextRecord();
      for (const TensorEntry& matrix : bank.matrices) {
        const FillSpec fill = ExpertFill(matrix);
        const uint64_t stream =
            StreamKey(seed, absl::StrCat("L", layer, "/E", expert, "/", matrix.name));
        FillInParallel(0, record.subspan(matrix.data.offset, matrix.data.bytes),
                       [&](uint64_t offset, std::span<std::byte> part) {
                         FillData(fill, stream, offset, part);
                       });
        if (matrix.scale) {
          FillScale(fill, stream, 0, record.subspan(matrix.scale->offset, matrix.scale->bytes));
        }
      }
      writer.CommitRecord();
      progress.Advance(bank.record_bytes);
    }
    WARP_RETURN_IF_ERROR(writer.EndBank());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SynthResult> SynthesizeModel(const fs::path& out, const SynthOptions& options) {
  WARP_ASSIGN_OR_RETURN(Preset preset, FindPreset(options.arch, options.preset));
  const TensorFormat expert_format = options.expert_format.value_or(preset.expert_format);
  const TensorFormat trunk_format = options.trunk_format.value_or(preset.trunk_format);
  std::optional<TrunkChoice> choice;
  if (options.trunk_choice) {
    WARP_ASSIGN_OR_RETURN(choice, TrunkChoice::Parse(*options.trunk_choice));
  }
  const TrunkFormatOf trunk_of = [&](const TrunkTensor& tensor) {
    return choice ? choice->FormatOf(tensor.kind, trunk_format, tensor.spec.shape) : trunk_format;
  };
  for (TensorFormat format : {expert_format, trunk_format}) {
    if (!CanFill(format)) {
      return absl::InvalidArgumentError(absl::StrCat("synth does not write ",
                                                     std::string(TensorFormatName(format)), "; ",
                                                     std::string(WhySynthCannotFill(format))));
    }
  }
  nlohmann::ordered_json config = preset.config;
  if (options.target_bytes) {
    WARP_ASSIGN_OR_RETURN(config, ScaleToSize(options.arch, config, expert_format, trunk_of,
                                              *options.target_bytes));
  }
  WARP_ASSIGN_OR_RETURN(ModelConfig model, ParseModelConfig(options.arch, config));
  WARP_ASSIGN_OR_RETURN(uint64_t total_bytes,
                        ContainerBytes(options.arch, config, expert_format, trunk_of));

  Manifest header;
  header.architecture = options.arch;
  header.config = config;
  header.source = SourceLine(options, expert_format, trunk_format);
  // The fingerprint names this build: same preset, size, formats and seed give
  // the same fingerprint, anything else a different one.
  header.fingerprint = Fnv1a64(absl::StrCat(config.dump(), "\n", header.source));

  auto& log = Logger("computed.synth");
  log.info("writing {} ({} {}, {} layers, {} experts/layer, {}) to {}", options.preset,
           options.arch, TensorFormatName(expert_format), model.num_layers, model.num_experts,
           FormatBytes(total_bytes), out.string());
  WARP_ASSIGN_OR_RETURN(auto writer, ContainerWriter::Create(out, std::move(header),
                                                             {.direct_io = options.direct_io}));
  ProgressBar progress("synth", total_bytes, options.show_progress);
  const std::vector<TensorSpec> trunk = TrunkSpecsOf(model, trunk_of);
  WARP_RETURN_IF_ERROR(WriteTrunk(*writer, trunk, model, options.seed, progress));
  // As `computed convert` writes them by default (`computed run --no-early-route` to compare).
  const uint64_t unfolded_trunk = writer->manifest().trunk_bytes;
  std::unordered_map<std::string, TensorSpec> written;
  for (const TensorSpec& spec : trunk) written[spec.name] = spec;
  WARP_RETURN_IF_ERROR(WriteEarlyRouteFolds(
      *writer, model, TensorFormat::kF32, [&](const TensorSpec& spec) {
        return StoredTrunk(written.at(spec.name), model, options.seed);
      }));
  progress.Advance(writer->manifest().trunk_bytes - unfolded_trunk);
  WARP_RETURN_IF_ERROR(WriteBanks(*writer, model, expert_format, options.seed, progress));
  if (!model.engram.layers.empty()) {
    // The engram's tables, and the tokenizer its token map comes from.
    WARP_RETURN_IF_ERROR(WriteSynthEngramTables(*writer, model, options.seed,
                                                [&](uint64_t bytes) { progress.Advance(bytes); }));
    WARP_ASSIGN_OR_RETURN(const std::string tokenizer,
                          SynthTokenizerJson(model.vocab_size, model.engram.compressed_vocab));
    WARP_RETURN_IF_ERROR(WriteFileAtomically(out / kSynthTokenizerFile, tokenizer));
    writer->SetTokenizer(TokenizerRef{.files = {kSynthTokenizerFile}});
  }
  WARP_RETURN_IF_ERROR(writer->Finish());
  progress.Finish();
  return SynthResult{.manifest = writer->manifest(),
                     .bytes_written = progress.done_bytes(),
                     .seconds = progress.elapsed_seconds()};
}

}  // namespace warp::computed
