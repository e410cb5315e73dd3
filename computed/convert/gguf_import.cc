#include "computed/convert/gguf_import.h"

#include <regex>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "common/logging.h"
#include "common/status.h"
#include "computed/convert/gguf.h"
#include "computed/convert/gguf_architectures.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The ggml block types WARP computes, and the container formats that keep their bytes.
constexpr std::pair<GgmlType, TensorFormat> kGgmlBlockFormats[] = {
    {GgmlType::kQ8_0, TensorFormat::kGgmlQ8_0}, {GgmlType::kQ4_0, TensorFormat::kGgmlQ4_0},
    {GgmlType::kQ4_1, TensorFormat::kGgmlQ4_1}, {GgmlType::kQ5_0, TensorFormat::kGgmlQ5_0},
    {GgmlType::kQ5_1, TensorFormat::kGgmlQ5_1}, {GgmlType::kMXFP4, TensorFormat::kGgmlMxfp4},
    {GgmlType::kQ2_K, TensorFormat::kGgmlQ2_K}, {GgmlType::kQ3_K, TensorFormat::kGgmlQ3_K},
    {GgmlType::kQ4_K, TensorFormat::kGgmlQ4_K}, {GgmlType::kQ5_K, TensorFormat::kGgmlQ5_K},
    {GgmlType::kQ6_K, TensorFormat::kGgmlQ6_K},
};

// `t`'s dtype (and block format) in `base`, or Unimplemented for a type WARP does not compute.
absl::Status SetType(const GgufFile& file, const GgufTensor& t, SourceTensor& base) {
  switch (static_cast<GgmlType>(t.type)) {
    case GgmlType::kF32:
      base.dtype = SourceDtype::kF32;
      return absl::OkStatus();
    case GgmlType::kF16:
      base.dtype = SourceDtype::kF16;
      return absl::OkStatus();
    case GgmlType::kBF16:
      base.dtype = SourceDtype::kBF16;
      return absl::OkStatus();
    default:
      break;
  }
  for (const auto& [type, format] : kGgmlBlockFormats) {
    if (static_cast<uint32_t>(type) == t.type) {
      base.dtype = SourceDtype::kGgmlBlocks;
      base.ggml_format = format;
      return absl::OkStatus();
    }
  }
  return absl::UnimplementedError(
      absl::StrCat(file.path().string(), ": tensor ", t.name, " is ", GgmlTypeName(t.type),
                   ", which WARP does not compute (F32, F16, BF16, Q8_0, Q4_0, Q4_1, "
                   "Q5_0, Q5_1, MXFP4, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K); "
                   "it is never dequantized and requantized behind your back"));
}

// The files of a split set, in order, from its first file's name.
absl::StatusOr<std::vector<fs::path>> SplitFiles(const fs::path& path) {
  static const std::regex kSplit(R"((.*)-(\d{5})-of-(\d{5})\.gguf)");
  std::smatch match;
  const std::string name = path.filename().string();
  if (!std::regex_match(name, match, kSplit)) return std::vector<fs::path>{path};
  if (match[2] != "00001") {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": a split set is opened by its first file (-00001-of-",
                     match[3].str(), ".gguf)"));
  }
  const int count = std::stoi(match[3]);
  std::vector<fs::path> files;
  for (int i = 1; i <= count; ++i) {
    char part[32];
    std::snprintf(part, sizeof(part), "-%05d-of-%05d.gguf", i, count);
    files.push_back(path.parent_path() / (match[1].str() + part));
  }
  return files;
}

// rope.scaling.*: none, or YaRN as llama.cpp runs it (correction range rounded
// to whole dims, betas 32 and 1 whatever the file says, so other values are
// refused) as rope_scaling. deepseek2 adds its mscale (gguf_architectures.cc).
absl::Status RopeScaling(const GgufHparams& h, Json& config) {
  // No rope.scaling key at all is the common case, not two defaults taken.
  if (!h.Has("rope.scaling.type") && !h.Has("rope.scaling.factor")) return absl::OkStatus();
  WARP_ASSIGN_OR_RETURN(double factor, h.FloatOr("rope.scaling.factor", 0.0));
  WARP_ASSIGN_OR_RETURN(const std::string type, h.StringOr("rope.scaling.type", "none"));
  h.Source("rope_scaling", h.Key("rope.scaling.*"));
  if (type == "none" || (type == "linear" && (factor == 0.0 || factor == 1.0))) {
    return absl::OkStatus();
  }
  if (type != "yarn") {
    return absl::UnimplementedError(absl::StrCat(h.Key("rope.scaling.type"), ": \"", type,
                                                 "\" is not supported (none, yarn)"));
  }
  for (const auto& [key, llama_cpp_value] :
       {std::pair{"rope.scaling.yarn_beta_fast", 32.0}, {"rope.scaling.yarn_beta_slow", 1.0},
        {"rope.scaling.yarn_ext_factor", 1.0}, {"rope.scaling.attn_factor", 1.0}}) {
    WARP_ASSIGN_OR_RETURN(double value, h.FloatOr(key, llama_cpp_value));
    if (value != llama_cpp_value) {
      return absl::UnimplementedError(absl::StrCat(h.Key(key), ": ", value,
                                                   " is not supported (", llama_cpp_value, ")"));
    }
  }
  for (const char* key : {"rope.scaling.yarn_attn_factor", "rope.scaling.alpha"}) {
    if (h.Has(key)) return absl::UnimplementedError(absl::StrCat(h.Key(key), ": not supported"));
  }
  if (h.Has("rope.scaling.yarn_log_multiplier") && h.arch() != "deepseek2") {
    return absl::UnimplementedError(
        absl::StrCat(h.Key("rope.scaling.yarn_log_multiplier"), ": supported for deepseek2 only"));
  }
  WARP_ASSIGN_OR_RETURN(uint64_t original,
                        h.UintOr("rope.scaling.original_context_length",
                                 config["max_position_embeddings"].get<uint64_t>()));
  config["rope_scaling"] = {{"rope_type", "yarn"},
                            {"factor", factor},
                            {"original_max_position_embeddings", original},
                            {"beta_fast", 32.0},
                            {"beta_slow", 1.0},
                            {"truncate", true}};
  return absl::OkStatus();
}

// The hyper-parameters every architecture names the same way.
absl::Status CommonConfig(const GgufHparams& h, Json& config) {
  WARP_RETURN_IF_ERROR(h.PutUint(config, "hidden_size", "embedding_length"));
  WARP_ASSIGN_OR_RETURN(const uint64_t blocks, h.Uint("block_count"));
  // Before an architecture sizes per-layer tables by it (a fuzzed 2^40 took
  // gigabytes before any other check).
  if (blocks > kMaxLayers) {
    return absl::InvalidArgumentError(absl::StrCat(h.Key("block_count"), ": ", blocks,
                                                   " is above WARP's bound of ", kMaxLayers));
  }
  config["num_hidden_layers"] = blocks;
  h.Source("num_hidden_layers", h.Key("block_count"));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "num_attention_heads", "attention.head_count"));
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "num_key_value_heads", "attention.head_count_kv",
                                   config["num_attention_heads"].get<uint64_t>()));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "num_experts_per_tok", "expert_used_count"));
  if (h.Has("feed_forward_length")) {
    WARP_RETURN_IF_ERROR(h.PutUint(config, "intermediate_size", "feed_forward_length"));
  }
  WARP_RETURN_IF_ERROR(
      h.PutFloatOr(config, "rms_norm_eps", "attention.layer_norm_rms_epsilon", 1e-6));
  WARP_RETURN_IF_ERROR(h.PutFloatOr(config, "rope_theta", "rope.freq_base", 10000.0));
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "max_position_embeddings", "context_length", 4096));
  // Nothing downstream reads 0 as "unknown": it would bound the context at nothing.
  if (config["max_position_embeddings"].get<uint64_t>() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(h.Key("context_length"), ": 0; a model's trained context is at least 1"));
  }
  return RopeScaling(h, config);
}

// "blk.N.STEM.SUFFIX" -> (N, STEM, SUFFIX); false for a name outside layers.
bool SplitLayerName(const std::string& name, uint32_t& layer, std::string& stem,
                    std::string& suffix) {
  static const std::regex kLayer(R"(blk\.(\d+)\.([A-Za-z0-9_.]+)\.(weight|bias))");
  std::smatch match;
  if (!std::regex_match(name, match, kLayer)) return false;
  layer = static_cast<uint32_t>(std::stoul(match[1]));
  stem = match[2];
  suffix = match[3];
  return true;
}

const GgufTensorRule* FindRule(std::span<const GgufTensorRule> rules, std::string_view stem) {
  for (const GgufTensorRule& rule : rules) {
    if (rule.gguf == stem) return &rule;
  }
  return nullptr;
}

// The files of one import, to find a tensor's partner (interleave_with) in any of them.
struct GgufFiles {
  std::span<const std::unique_ptr<GgufFile>> files;

  // The tensor named `name` and the index of its file, or nullptr.
  const GgufTensor* Find(const std::string& name, size_t& file_index) const {
    for (size_t i = 0; i < files.size(); ++i) {
      if (const GgufTensor* t = files[i]->Find(name)) {
        file_index = i;
        return t;
      }
    }
    return nullptr;
  }
};

std::string TensorError(const GgufFile& file, const GgufTensor& t, std::string_view problem) {
  return absl::StrCat(file.path().string(), ": tensor ", t.name, ": ", std::string(problem));
}

// What every tensor of one import is added against.
struct ImportContext {
  const GgufFiles& all;
  const GgufArchitecture& arch;
  const GgufHparams& hparams;
  const Json& config;
  uint32_t num_layers = 0;      // decoded: block_count less the MTP layers
  uint32_t num_mtp_layers = 0;  // <arch>.nextn_predict_layers
  uint32_t num_experts = 0;     // <arch>.expert_count
};

// Source tensors under their Hugging Face names.
using TensorsByName = std::map<std::string, SourceTensor>;

// What the tensors add up to.
struct ImportedTensors {
  TensorsByName by_name;
  size_t skipped = 0;              // of the MTP layers
  std::vector<bool> layers_seen;   // [num_layers]: a blk.N.* tensor is in the files
};

// Where one GGUF tensor lands: its rule and the parts of its name its
// Hugging Face name keeps.
struct TensorPlace {
  const GgufTensorRule* rule = nullptr;
  bool mtp_layer = false;  // of a multi-token-prediction layer: skipped
  uint32_t layer = 0;
  std::string suffix;  // "weight" or "bias", as the GGUF name has it
  std::string prefix;  // "model.layers.N.", or empty for a global tensor
};

// `t`'s rule and place, marking its layer seen; an error for a layer past
// block_count or a name the architecture gives no meaning.
absl::StatusOr<TensorPlace> PlaceTensor(const ImportContext& context, const GgufFile& file,
                                        const GgufTensor& t, ImportedTensors& imported) {
  const uint32_t num_layers = context.num_layers;
  TensorPlace place;
  std::string stem;
  if (SplitLayerName(t.name, place.layer, stem, place.suffix)) {
    place.rule = FindRule(context.arch.layer_tensors, stem);
    if (place.layer >= num_layers && place.layer < num_layers + context.num_mtp_layers) {
      place.mtp_layer = true;
      return place;
    }
    if (place.layer >= num_layers) {
      return absl::InvalidArgumentError(TensorError(
          file, t,
          absl::StrCat("layer ", place.layer, ", but ", context.hparams.Key("block_count"), " is ",
                       num_layers + context.num_mtp_layers,
                       context.num_mtp_layers > 0
                           ? absl::StrCat(" (", context.num_mtp_layers, " of them MTP layers)")
                           : std::string())));
    }
    imported.layers_seen[place.layer] = true;
    place.prefix = absl::StrCat("model.layers.", place.layer, ".");
  } else if (const size_t dot = t.name.rfind('.'); dot != std::string::npos) {
    stem = t.name.substr(0, dot);
    place.suffix = t.name.substr(dot + 1);
    place.rule = FindRule(context.arch.global_tensors, stem);
  }
  if (place.rule == nullptr) {
    const GgufArchitecture& arch = context.arch;
    return absl::InvalidArgumentError(
        absl::StrCat(file.path().string(), ": tensor ", t.name, " has no meaning in WARP's ",
                     std::string(arch.model_type), " (architecture ", std::string(arch.name), ")"));
  }
  return place;
}

// `t` as one source tensor, shape outermost first: its dtype, per-head rows
// merged, and the heads whose rows llama.cpp permuted for its RoPE.
absl::StatusOr<SourceTensor> BaseTensor(const ImportContext& context, size_t file_index,
                                        const GgufTensor& t, const GgufTensorRule& rule) {
  const GgufFile& file = *context.all.files[file_index];
  std::vector<uint64_t> shape(t.dims.rbegin(), t.dims.rend());
  if (rule.merge_rows) {
    if (shape.size() != 3) {
      return absl::InvalidArgumentError(
          TensorError(file, t, absl::StrCat(shape.size(), " dims; per-head tensors have 3")));
    }
    shape = {shape[0] * shape[1], shape[2]};
  }
  SourceTensor base{.shape = shape, .offset = t.offset, .bytes = t.bytes, .file = file_index};
  base.gguf_name = t.name;
  WARP_RETURN_IF_ERROR(SetType(file, t, base));
  if (rule.rope_rows != GgufRopeRows::kAsStored) {
    const char* heads =
        rule.rope_rows == GgufRopeRows::kQueryHeads ? "num_attention_heads" : "num_key_value_heads";
    base.llama_rope_heads = context.config[heads].get<uint32_t>();
    if (shape.empty() || shape[0] % (2 * base.llama_rope_heads) != 0) {
      return absl::InvalidArgumentError(TensorError(
          file, t,
          absl::StrCat(shape.empty() ? 0 : shape[0], " rows are not heads of even size over ",
                       base.llama_rope_heads, " heads")));
    }
  }
  return base;
}

// gpt-oss: `base` becomes the pair of `t` and its partner (rule.interleave_with),
// gate's rows then up's, in turn; twice the rows (or bias values).
absl::Status InterleaveWithPartner(const GgufFiles& all, const GgufFile& file, const GgufTensor& t,
                                   const TensorPlace& place, const GgufTensorRule& rule,
                                   SourceTensor& base) {
  size_t partner_file = 0;
  const std::string partner_name =
      absl::StrCat("blk.", place.layer, ".", std::string(rule.interleave_with), ".", place.suffix);
  const GgufTensor* partner = all.Find(partner_name, partner_file);
  if (partner == nullptr) {
    return absl::NotFoundError(TensorError(
        file, t, absl::StrCat(partner_name, ", whose rows interleave with it, is missing")));
  }
  if (partner->type != t.type || partner->dims != t.dims) {
    return absl::InvalidArgumentError(TensorError(
        file, t,
        absl::StrCat(partner_name, ", whose rows interleave with it, has another type or shape")));
  }
  // A unit is a matrix row, or one bias value; the pair has twice as many.
  std::vector<uint64_t>& shape = base.shape;
  const bool bias = place.suffix == "bias";
  if (shape.size() < (bias ? 1u : 2u)) {
    return absl::InvalidArgumentError(TensorError(file, t, "too few dims to interleave"));
  }
  const uint64_t units = bias ? NumElements(shape) : NumElements(shape) / shape.back();
  base.interleaved = SourceTensor::Interleaved{
      .file = partner_file, .offset = partner->offset, .unit = t.bytes / units};
  base.bytes = 2 * t.bytes;
  shape[bias ? shape.size() - 1 : shape.size() - 2] *= 2;
  return absl::OkStatus();
}

// An expert tensor as one [rows, cols] tensor per expert, each named
// `prefix` + rule.hf with "{}" the expert + `dot_suffix`.
absl::Status AddPerExpert(const ImportContext& context, const GgufFile& file, const GgufTensor& t,
                          const GgufTensorRule& rule, const std::string& prefix,
                          const std::string& suffix, const std::string& dot_suffix,
                          SourceTensor base, TensorsByName& out) {
  // Expert matrices are [experts, rows, cols]; their biases (gpt-oss) [experts, rows].
  if (base.shape.size() != 3 && !(suffix == "bias" && base.shape.size() == 2)) {
    return absl::InvalidArgumentError(TensorError(
        file, t, absl::StrCat(base.shape.size(), " dims; expert tensors have 3 (biases 2)")));
  }
  const uint64_t experts = base.shape[0];
  if (experts != context.num_experts) {
    return absl::InvalidArgumentError(TensorError(
        file, t,
        absl::StrCat("holds ", experts, " experts, but ", context.hparams.Key("expert_count"),
                     " is ", context.num_experts)));
  }
  base.shape.erase(base.shape.begin());
  const uint64_t stored_bytes = t.bytes / experts;  // one expert's in each run
  base.bytes = base.interleaved ? 2 * stored_bytes : stored_bytes;
  for (uint64_t e = 0; e < experts; ++e) {
    SourceTensor expert = base;
    expert.name = absl::StrCat(
        prefix, absl::StrReplaceAll(std::string(rule.hf), {{"{}", absl::StrCat(e)}}), dot_suffix);
    expert.gguf_name = absl::StrCat(t.name, ", expert ", e);
    expert.offset = t.offset + e * stored_bytes;
    if (expert.interleaved) expert.interleaved->offset += e * stored_bytes;
    out.emplace(expert.name, std::move(expert));
  }
  return absl::OkStatus();
}

// Adds `t` under its Hugging Face name(s): shapes outermost first, an expert
// tensor as one [rows, cols] tensor per expert.
absl::Status AddTensor(const ImportContext& context, size_t file_index, const GgufTensor& t,
                       ImportedTensors& imported) {
  const GgufFile& file = *context.all.files[file_index];
  WARP_ASSIGN_OR_RETURN(const TensorPlace place, PlaceTensor(context, file, t, imported));
  if (place.mtp_layer) {
    ++imported.skipped;
    return absl::OkStatus();
  }
  const GgufTensorRule& rule = *place.rule;
  if (rule.hf.empty()) return absl::OkStatus();  // read with its partner's rule
  WARP_ASSIGN_OR_RETURN(SourceTensor base, BaseTensor(context, file_index, t, rule));
  if (!rule.interleave_with.empty()) {
    WARP_RETURN_IF_ERROR(InterleaveWithPartner(context.all, file, t, place, rule, base));
  }
  const std::string suffix = rule.hf_suffix.empty() ? place.suffix : std::string(rule.hf_suffix);
  const std::string dot_suffix = suffix == kNoSuffix ? "" : absl::StrCat(".", suffix);
  if (!rule.per_expert) {
    base.name = absl::StrCat(place.prefix, std::string(rule.hf), dot_suffix);
    imported.by_name.emplace(base.name, base);
    return absl::OkStatus();
  }
  return AddPerExpert(context, file, t, rule, place.prefix, suffix, dot_suffix, std::move(base),
                      imported.by_name);
}

// `status` naming the file, if it does not already.
absl::Status NameFile(const absl::Status& status, const GgufFile& file) {
  const std::string path = file.path().string();
  if (status.ok() || absl::StartsWith(status.message(), path)) return status;
  return Annotate(status, path);
}

// A refusal of the config the metadata stands for ("config.json: KEY: ...",
// as ParseModelConfig words it), naming the GGUF key its value came from:
// the user has no config.json to look at.
absl::Status NameGgufKeys(const absl::Status& status, const GgufFile& file,
                          const std::map<std::string, std::string>& sources) {
  std::string message(status.message());
  constexpr std::string_view kConfigPrefix = "config.json: ";
  if (message.starts_with(kConfigPrefix)) message.erase(0, kConfigPrefix.size());
  const size_t colon = message.find(": ");
  if (colon != std::string::npos) {
    const std::string key = message.substr(0, colon);
    // A nested key ("rope_scaling.factor") came with its object.
    auto it = sources.find(key);
    if (it == sources.end()) it = sources.find(key.substr(0, key.find_first_of(".[")));
    if (it != sources.end()) {
      message = absl::StrCat(it->second, " (config ", key, ")", message.substr(colon));
    }
  }
  return absl::Status(status.code(), absl::StrCat(file.path().string(), ": ", message));
}

// vocab_size and tie_word_embeddings, from token_embd's rows and whether output is there.
absl::Status VocabFromTensors(const GgufFiles& all, const fs::path& path, const GgufHparams& h,
                              Json& config) {
  size_t file_index = 0;
  const GgufTensor* embed = all.Find("token_embd.weight", file_index);
  if (embed == nullptr || embed->dims.size() != 2) {
    return absl::NotFoundError(
        absl::StrCat(path.string(), ": tensor token_embd.weight is missing"));
  }
  config["vocab_size"] = embed->dims[1];
  h.Source("vocab_size", "tensor token_embd.weight's rows");
  config["tie_word_embeddings"] = all.Find("output.weight", file_index) == nullptr;
  // The rows decide; llama.cpp writes the key for some architectures only.
  h.Has("vocab_size");
  return absl::OkStatus();
}

// Logs the defaults taken for missing keys and warns about the "<arch>.*"
// keys nothing read: a misspelled key would otherwise take a default silently.
void ReportKeys(const GgufHparams& h, GgufImport& result) {
  const std::string path = h.file().path().string();
  result.defaults_taken = h.defaults();
  result.unread_keys = h.UnreadKeys();
  if (!result.defaults_taken.empty()) {
    Logger("computed").info("{}: missing keys, defaults taken: {}", path,
                            absl::StrJoin(result.defaults_taken, ", "));
  }
  if (!result.unread_keys.empty()) {
    Logger("computed").warn("{}: {} key(s) WARP does not read (misspelled, or a feature WARP "
                            "does not have): {}",
                            path, result.unread_keys.size(), absl::StrJoin(result.unread_keys, ", "));
  }
}

// The files of a split set (or the one file), each checked to say its place in the set.
absl::StatusOr<std::vector<std::unique_ptr<GgufFile>>> OpenFiles(
    const std::vector<fs::path>& paths) {
  std::vector<std::unique_ptr<GgufFile>> files;
  for (const fs::path& p : paths) {
    WARP_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(p));
    files.push_back(std::move(file));
  }
  if (paths.size() == 1) return files;
  for (size_t i = 0; i < files.size(); ++i) {
    WARP_ASSIGN_OR_RETURN(uint64_t count, files[i]->Uint("split.count"));
    WARP_ASSIGN_OR_RETURN(uint64_t no, files[i]->Uint("split.no"));
    if (count != files.size() || no != i) {
      return absl::InvalidArgumentError(absl::StrCat(paths[i].string(), ": split.no ", no,
                                                     " of split.count ", count, "; expected ", i,
                                                     " of ", files.size()));
    }
  }
  return files;
}

// The config.json a GGUF's metadata stands for, and the layer counts it was cut from.
struct MetadataConfig {
  Json config;
  uint64_t block_count = 0;  // <arch>.block_count, the MTP layers included
  uint64_t mtp_layers = 0;   // <arch>.nextn_predict_layers, left out of num_hidden_layers
};

// Leaves the multi-token-prediction layers (which do not decode) out of num_hidden_layers.
absl::Status DropMtpLayers(const GgufHparams& hparams, const fs::path& path, MetadataConfig& meta) {
  WARP_ASSIGN_OR_RETURN(meta.mtp_layers, hparams.UintOr("nextn_predict_layers", 0));
  meta.block_count = meta.config["num_hidden_layers"].get<uint64_t>();
  if (meta.mtp_layers >= meta.block_count) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": ", hparams.Key("nextn_predict_layers"), " ", meta.mtp_layers,
                     " of ", meta.block_count, " blocks"));
  }
  meta.config["num_hidden_layers"] = meta.block_count - meta.mtp_layers;
  if (meta.mtp_layers > 0) {
    hparams.Source("num_hidden_layers", absl::StrCat(hparams.Key("block_count"), " - ",
                                                     hparams.Key("nextn_predict_layers")));
  }
  return absl::OkStatus();
}

// The config from the first file's metadata and the tensors' shapes.
absl::StatusOr<MetadataConfig> ConfigFromMetadata(const GgufHparams& hparams,
                                                  const GgufArchitecture& arch,
                                                  const GgufFiles& all, const fs::path& path) {
  const GgufFile& first = hparams.file();
  MetadataConfig meta{.config = {{"model_type", std::string(arch.model_type)}}};
  WARP_RETURN_IF_ERROR(NameFile(CommonConfig(hparams, meta.config), first));
  WARP_RETURN_IF_ERROR(NameFile(arch.config(hparams, meta.config), first));
  WARP_RETURN_IF_ERROR(DropMtpLayers(hparams, path, meta));
  WARP_RETURN_IF_ERROR(VocabFromTensors(all, path, hparams, meta.config));
  for (const char* id : {"bos_token_id", "eos_token_id"}) {
    const std::string key = absl::StrCat("tokenizer.ggml.", id);
    if (first.metadata().contains(key)) {
      WARP_ASSIGN_OR_RETURN(meta.config[id], first.Uint(key));
      hparams.Source(id, key);
    }
  }
  return meta;
}

// Every tensor of every file under its Hugging Face name(s); an error if a
// decoded layer has none.
absl::StatusOr<TensorsByName> ImportTensors(const ImportContext& context, const fs::path& path,
                                            uint64_t block_count) {
  ImportedTensors tensors;
  tensors.layers_seen.resize(context.num_layers);
  for (size_t i = 0; i < context.all.files.size(); ++i) {
    for (const GgufTensor& t : context.all.files[i]->tensors()) {
      WARP_RETURN_IF_ERROR(AddTensor(context, i, t, tensors));
    }
  }
  for (uint32_t layer = 0; layer < context.num_layers; ++layer) {
    if (!tensors.layers_seen[layer]) {
      return absl::NotFoundError(
          absl::StrCat(path.string(), ": ", context.hparams.Key("block_count"), " is ", block_count,
                       ", but no tensor of layer ", layer, " (blk.", layer, ".*) is in the file"));
    }
  }
  if (tensors.skipped > 0) {
    Logger("computed")
        .info("skipped the {} tensors of the {} MTP layer(s): not used to decode", tensors.skipped,
              context.num_mtp_layers);
  }
  return std::move(tensors.by_name);
}

}  // namespace

bool IsGgufPath(const fs::path& path) { return path.extension() == ".gguf"; }

absl::StatusOr<GgufImport> ImportGguf(const fs::path& path) {
  WARP_ASSIGN_OR_RETURN(std::vector<fs::path> paths, SplitFiles(path));
  WARP_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<GgufFile>> files, OpenFiles(paths));
  const GgufFile& first = *files.front();
  GgufImport result;
  WARP_ASSIGN_OR_RETURN(result.architecture, first.String("general.architecture"));
  absl::StatusOr<const GgufArchitecture*> arch = FindGgufArchitecture(result.architecture);
  if (!arch.ok()) return Annotate(arch.status(), path.string());
  const GgufHparams hparams(first, result.architecture);
  const GgufFiles all{files};
  WARP_ASSIGN_OR_RETURN(MetadataConfig meta, ConfigFromMetadata(hparams, **arch, all, path));
  // The config is checked here, where its keys can still be named as the
  // file's; the converter checks the tensors against it.
  absl::StatusOr<ModelConfig> model =
      ParseModelConfig(meta.config["model_type"].get<std::string>(), meta.config);
  if (!model.ok()) return NameGgufKeys(model.status(), first, hparams.sources());

  const ImportContext context{.all = all,
                              .arch = **arch,
                              .hparams = hparams,
                              .config = meta.config,
                              .num_layers = model->num_layers,
                              .num_mtp_layers = static_cast<uint32_t>(meta.mtp_layers),
                              .num_experts = model->num_experts};
  WARP_ASSIGN_OR_RETURN(TensorsByName tensors, ImportTensors(context, path, meta.block_count));
  ReportKeys(hparams, result);
  WARP_ASSIGN_OR_RETURN(result.tokenizer, GgufTokenizer(first));
  if (first.metadata().contains("tokenizer.chat_template")) {
    WARP_ASSIGN_OR_RETURN(result.chat_template, first.String("tokenizer.chat_template"));
  }
  result.config = std::move(meta.config);
  WARP_ASSIGN_OR_RETURN(result.checkpoint, Checkpoint::FromTensors(paths, std::move(tensors)));
  return result;
}

}  // namespace warp::computed
