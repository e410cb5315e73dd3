#include "common/format/manifest.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/format/manifest_checks.h"
#include "common/json_depth.h"
#include "common/status.h"

namespace warp {
namespace {

using json = nlohmann::ordered_json;

// Typed access to one JSON object that names the field path in every error.
class FieldReader {
 public:
  FieldReader(const json& object, std::string path) : object_(object), path_(std::move(path)) {}

  absl::StatusOr<const json*> Field(std::string_view key) const {
    auto it = object_.find(std::string(key));
    if (it == object_.end()) return Error(key, "missing");
    return &*it;
  }

  absl::StatusOr<uint64_t> Uint(std::string_view key) const {
    WARP_ASSIGN_OR_RETURN(const json* value, Field(key));
    if (!value->is_number_unsigned()) return Error(key, "must be a non-negative integer");
    return value->get<uint64_t>();
  }

  absl::StatusOr<uint32_t> Uint32(std::string_view key) const {
    WARP_ASSIGN_OR_RETURN(uint64_t value, Uint(key));
    if (value > UINT32_MAX) return Error(key, "does not fit in 32 bits");
    return static_cast<uint32_t>(value);
  }

  absl::StatusOr<std::string> String(std::string_view key) const {
    WARP_ASSIGN_OR_RETURN(const json* value, Field(key));
    if (!value->is_string()) return Error(key, "must be a string");
    return value->get<std::string>();
  }

  absl::StatusOr<const json*> Array(std::string_view key) const {
    WARP_ASSIGN_OR_RETURN(const json* value, Field(key));
    if (!value->is_array()) return Error(key, "must be an array");
    return value;
  }

  absl::StatusOr<const json*> Object(std::string_view key) const {
    WARP_ASSIGN_OR_RETURN(const json* value, Field(key));
    if (!value->is_object()) return Error(key, "must be an object");
    return value;
  }

  bool HasNonNull(std::string_view key) const {
    auto it = object_.find(std::string(key));
    return it != object_.end() && !it->is_null();
  }

  std::string Path(std::string_view key) const {
    return path_.empty() ? std::string(key) : absl::StrCat(path_, ".", std::string(key));
  }

  absl::Status Error(std::string_view key, std::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat(Path(key), ": ", std::string(problem)));
  }

 private:
  const json& object_;
  std::string path_;
};

absl::StatusOr<FieldReader> ObjectAt(const json& value, std::string path) {
  if (!value.is_object()) return absl::InvalidArgumentError(path + ": must be an object");
  return FieldReader(value, std::move(path));
}

json ExtentToJson(const Extent& extent) {
  return json{{"offset", extent.offset}, {"bytes", extent.bytes}};
}

absl::StatusOr<Extent> ParseExtent(const FieldReader& parent, std::string_view key) {
  WARP_ASSIGN_OR_RETURN(const json* value, parent.Object(key));
  FieldReader reader(*value, parent.Path(key));
  Extent extent;
  WARP_ASSIGN_OR_RETURN(extent.offset, reader.Uint("offset"));
  WARP_ASSIGN_OR_RETURN(extent.bytes, reader.Uint("bytes"));
  return extent;
}

json TensorToJson(const TensorEntry& tensor) {
  json out{{"name", tensor.name},
           {"format", TensorFormatName(tensor.format)},
           {"shape", tensor.shape},
           {"data", ExtentToJson(tensor.data)}};
  if (tensor.scale) out["scale"] = ExtentToJson(*tensor.scale);
  if (tensor.crc32c) out["crc32c"] = *tensor.crc32c;
  return out;
}

absl::StatusOr<TensorEntry> ParseTensor(const json& value, const std::string& path) {
  WARP_ASSIGN_OR_RETURN(FieldReader reader, ObjectAt(value, path));
  TensorEntry tensor;
  WARP_ASSIGN_OR_RETURN(tensor.name, reader.String("name"));
  WARP_ASSIGN_OR_RETURN(std::string format, reader.String("format"));
  std::optional<TensorFormat> parsed = ParseTensorFormat(format);
  if (!parsed)
    return reader.Error("format", absl::StrCat("unknown tensor format \"", format, "\""));
  tensor.format = *parsed;
  WARP_ASSIGN_OR_RETURN(const json* shape, reader.Array("shape"));
  for (const json& dim : *shape) {
    if (!dim.is_number_unsigned()) return reader.Error("shape", "must hold non-negative integers");
    tensor.shape.push_back(dim.get<uint64_t>());
  }
  if (std::string problem = ShapeProblem(tensor.format, tensor.shape); !problem.empty()) {
    return reader.Error("shape", absl::StrCat("tensor ", tensor.name, ": ", problem));
  }
  WARP_ASSIGN_OR_RETURN(tensor.data, ParseExtent(reader, "data"));
  if (HasScale(tensor.format)) {
    WARP_ASSIGN_OR_RETURN(tensor.scale, ParseExtent(reader, "scale"));
  }
  if (reader.HasNonNull("crc32c")) {
    WARP_ASSIGN_OR_RETURN(tensor.crc32c, reader.Uint32("crc32c"));
  }
  return tensor;
}

absl::StatusOr<std::vector<TensorEntry>> ParseTensors(const FieldReader& parent,
                                                      std::string_view key) {
  WARP_ASSIGN_OR_RETURN(const json* array, parent.Array(key));
  std::vector<TensorEntry> tensors;
  for (size_t i = 0; i < array->size(); ++i) {
    WARP_ASSIGN_OR_RETURN(TensorEntry tensor,
                          ParseTensor((*array)[i], absl::StrCat(parent.Path(key), "[", i, "]")));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

absl::StatusOr<BankEntry> ParseBank(const json& value, const std::string& path) {
  WARP_ASSIGN_OR_RETURN(FieldReader reader, ObjectAt(value, path));
  BankEntry bank;
  WARP_ASSIGN_OR_RETURN(bank.layer, reader.Uint32("layer"));
  WARP_ASSIGN_OR_RETURN(bank.file, reader.String("file"));
  WARP_ASSIGN_OR_RETURN(bank.num_experts, reader.Uint32("num_experts"));
  WARP_ASSIGN_OR_RETURN(bank.record_bytes, reader.Uint("record_bytes"));
  WARP_ASSIGN_OR_RETURN(bank.payload_bytes, reader.Uint("payload_bytes"));
  WARP_ASSIGN_OR_RETURN(bank.matrices, ParseTensors(reader, "matrices"));
  return bank;
}

absl::StatusOr<EngramTableEntry> ParseEngramTable(const json& value, const std::string& path) {
  WARP_ASSIGN_OR_RETURN(FieldReader reader, ObjectAt(value, path));
  EngramTableEntry table;
  WARP_ASSIGN_OR_RETURN(table.layer, reader.Uint32("layer"));
  WARP_ASSIGN_OR_RETURN(table.file, reader.String("file"));
  WARP_ASSIGN_OR_RETURN(table.rows, reader.Uint("rows"));
  WARP_ASSIGN_OR_RETURN(table.row_bytes, reader.Uint32("row_bytes"));
  return table;
}

absl::StatusOr<KeptTensorsEntry> ParseKept(const json& value, const std::string& path) {
  WARP_ASSIGN_OR_RETURN(FieldReader reader, ObjectAt(value, path));
  KeptTensorsEntry kept;
  WARP_ASSIGN_OR_RETURN(kept.file, reader.String("file"));
  WARP_ASSIGN_OR_RETURN(kept.about, reader.String("about"));
  WARP_ASSIGN_OR_RETURN(kept.tensors, reader.Uint("tensors"));
  WARP_ASSIGN_OR_RETURN(kept.bytes, reader.Uint("bytes"));
  return kept;
}

absl::StatusOr<TokenizerRef> ParseTokenizer(const FieldReader& parent) {
  WARP_ASSIGN_OR_RETURN(const json* value, parent.Object("tokenizer"));
  FieldReader reader(*value, "tokenizer");
  TokenizerRef tokenizer;
  WARP_ASSIGN_OR_RETURN(const json* files, reader.Array("files"));
  for (const json& file : *files) {
    if (!file.is_string()) return reader.Error("files", "must hold strings");
    tokenizer.files.push_back(file.get<std::string>());
  }
  if (reader.HasNonNull("chat_template")) {
    WARP_ASSIGN_OR_RETURN(tokenizer.chat_template, reader.String("chat_template"));
  }
  return tokenizer;
}

// The experts of one layer in `held`: increasing numbers, each one once.
absl::StatusOr<std::vector<uint32_t>> ParseHeldExperts(const FieldReader& reader) {
  WARP_ASSIGN_OR_RETURN(const json* experts, reader.Array("experts"));
  std::vector<uint32_t> held;
  for (const json& expert : *experts) {
    if (!expert.is_number_unsigned() || expert.get<uint64_t>() > UINT32_MAX ||
        (!held.empty() && expert.get<uint64_t>() <= held.back())) {
      return reader.Error("experts", "must be increasing expert numbers");
    }
    held.push_back(expert.get<uint32_t>());
  }
  return held;
}

// `held` ([{layer, experts}]), or the first format's `owner` (owner[e]: the
// shard holding expert e in every layer), read as the same `held`.
absl::StatusOr<ShardMap> ParseShardMap(const FieldReader& parent,
                                       const std::vector<BankEntry>& banks) {
  WARP_ASSIGN_OR_RETURN(const json* value, parent.Object("shard_map"));
  FieldReader reader(*value, "shard_map");
  ShardMap map;
  WARP_ASSIGN_OR_RETURN(map.num_shards, reader.Uint32("num_shards"));
  WARP_ASSIGN_OR_RETURN(map.shard_index, reader.Uint32("shard_index"));
  if (map.num_shards == 0 || map.shard_index >= map.num_shards) {
    return reader.Error("shard_index",
                        absl::StrCat(map.shard_index, " is not below num_shards ", map.num_shards));
  }
  if (reader.HasNonNull("held")) {
    WARP_ASSIGN_OR_RETURN(const json* held, reader.Array("held"));
    for (size_t i = 0; i < held->size(); ++i) {
      const std::string path = absl::StrCat("shard_map.held[", i, "]");
      if (!(*held)[i].is_object()) return absl::InvalidArgumentError(path + ": must be an object");
      FieldReader layer_reader((*held)[i], path);
      WARP_ASSIGN_OR_RETURN(uint32_t layer, layer_reader.Uint32("layer"));
      WARP_ASSIGN_OR_RETURN(std::vector<uint32_t> experts, ParseHeldExperts(layer_reader));
      if (!map.held.emplace(layer, std::move(experts)).second) {
        return layer_reader.Error("layer", absl::StrCat(layer, " is listed twice"));
      }
    }
    return map;
  }
  WARP_ASSIGN_OR_RETURN(const json* owner, reader.Array("owner"));
  for (const BankEntry& bank : banks) {
    if (owner->size() < bank.num_experts) {
      return reader.Error("owner", absl::StrCat("names ", owner->size(), " experts, the bank of layer ",
                                                bank.layer, " ", bank.num_experts));
    }
  }
  for (const json& shard : *owner) {
    if (!shard.is_number_unsigned() || shard.get<uint64_t>() >= map.num_shards) {
      return reader.Error("owner", "must hold shard indices below num_shards");
    }
  }
  for (const BankEntry& bank : banks) {
    std::vector<uint32_t>& held = map.held[bank.layer];
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
      if ((*owner)[expert].get<uint32_t>() == map.shard_index) held.push_back(expert);
    }
  }
  return map;
}

absl::StatusOr<uint64_t> ParseFingerprint(const FieldReader& reader) {
  WARP_ASSIGN_OR_RETURN(std::string hex, reader.String("fingerprint"));
  uint64_t fingerprint = 0;
  const bool all_hex = std::all_of(hex.begin(), hex.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
  if (hex.size() != 16 || !all_hex || !absl::SimpleHexAtoi(hex, &fingerprint)) {
    return reader.Error("fingerprint", absl::StrCat("\"", hex, "\" is not 16 hex digits"));
  }
  return fingerprint;
}

absl::StatusOr<Manifest> ParseManifestJson(const json& root) {
  if (!root.is_object()) return absl::InvalidArgumentError("top level: must be an object");
  FieldReader reader(root, "");
  Manifest manifest;
  WARP_ASSIGN_OR_RETURN(manifest.format_version, reader.Uint32("format_version"));
  if (manifest.format_version != kFormatVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("format_version ", manifest.format_version,
                     " is not supported (this build reads version ", kFormatVersion, ")"));
  }
  WARP_ASSIGN_OR_RETURN(manifest.architecture, reader.String("architecture"));
  WARP_ASSIGN_OR_RETURN(const json* config, reader.Object("config"));
  manifest.config = *config;
  WARP_ASSIGN_OR_RETURN(manifest.fingerprint, ParseFingerprint(reader));
  if (reader.HasNonNull("source")) {
    WARP_ASSIGN_OR_RETURN(manifest.source, reader.String("source"));
  }
  if (reader.HasNonNull("tokenizer")) {
    WARP_ASSIGN_OR_RETURN(manifest.tokenizer, ParseTokenizer(reader));
  }
  if (reader.HasNonNull("codebooks")) {
    WARP_ASSIGN_OR_RETURN(manifest.codebooks_file, reader.String("codebooks"));
  }
  WARP_ASSIGN_OR_RETURN(const json* trunk, reader.Object("trunk"));
  FieldReader trunk_reader(*trunk, "trunk");
  WARP_ASSIGN_OR_RETURN(manifest.trunk_bytes, trunk_reader.Uint("bytes"));
  WARP_ASSIGN_OR_RETURN(manifest.trunk, ParseTensors(trunk_reader, "tensors"));
  WARP_ASSIGN_OR_RETURN(const json* banks, reader.Array("banks"));
  for (size_t i = 0; i < banks->size(); ++i) {
    WARP_ASSIGN_OR_RETURN(BankEntry bank, ParseBank((*banks)[i], absl::StrCat("banks[", i, "]")));
    manifest.banks.push_back(std::move(bank));
  }
  if (reader.HasNonNull("engram")) {
    WARP_ASSIGN_OR_RETURN(const json* tables, reader.Array("engram"));
    for (size_t i = 0; i < tables->size(); ++i) {
      WARP_ASSIGN_OR_RETURN(EngramTableEntry table,
                            ParseEngramTable((*tables)[i], absl::StrCat("engram[", i, "]")));
      manifest.engram.push_back(std::move(table));
    }
  }
  if (reader.HasNonNull("kept")) {
    WARP_ASSIGN_OR_RETURN(const json* kept, reader.Array("kept"));
    for (size_t i = 0; i < kept->size(); ++i) {
      WARP_ASSIGN_OR_RETURN(KeptTensorsEntry entry,
                            ParseKept((*kept)[i], absl::StrCat("kept[", i, "]")));
      manifest.kept.push_back(std::move(entry));
    }
  }
  if (reader.HasNonNull("shard_map")) {
    WARP_ASSIGN_OR_RETURN(manifest.shard_map, ParseShardMap(reader, manifest.banks));
  }
  return manifest;
}

}  // namespace

const BankEntry* Manifest::FindBank(uint32_t layer) const {
  for (const BankEntry& bank : banks) {
    if (bank.layer == layer) return &bank;
  }
  return nullptr;
}

const TensorEntry* Manifest::FindTrunkTensor(std::string_view name) const {
  for (const TensorEntry& tensor : trunk) {
    if (tensor.name == name) return &tensor;
  }
  return nullptr;
}

std::string FingerprintHex(uint64_t fingerprint) { return absl::StrFormat("%016x", fingerprint); }

json ManifestToJson(const Manifest& manifest) {
  json trunk_tensors = json::array();
  for (const TensorEntry& tensor : manifest.trunk) trunk_tensors.push_back(TensorToJson(tensor));
  json banks = json::array();
  for (const BankEntry& bank : manifest.banks) {
    json matrices = json::array();
    for (const TensorEntry& matrix : bank.matrices) matrices.push_back(TensorToJson(matrix));
    banks.push_back({{"layer", bank.layer},
                     {"file", bank.file},
                     {"num_experts", bank.num_experts},
                     {"record_bytes", bank.record_bytes},
                     {"payload_bytes", bank.payload_bytes},
                     {"matrices", std::move(matrices)}});
  }
  json out{{"format", "warp"},
           {"format_version", manifest.format_version},
           {"architecture", manifest.architecture},
           {"config", manifest.config},
           {"fingerprint", FingerprintHex(manifest.fingerprint)},
           {"source", manifest.source},
           {"tokenizer", nullptr},
           {"codebooks", nullptr},
           {"trunk",
            {{"file", kTrunkFile},
             {"bytes", manifest.trunk_bytes},
             {"tensors", std::move(trunk_tensors)}}},
           {"banks", std::move(banks)},
           {"shard_map", nullptr}};
  if (manifest.tokenizer) {
    out["tokenizer"] = {{"files", manifest.tokenizer->files},
                        {"chat_template", manifest.tokenizer->chat_template}};
  }
  if (manifest.codebooks_file) out["codebooks"] = *manifest.codebooks_file;
  if (!manifest.engram.empty()) {  // absent for the families without one
    json tables = json::array();
    for (const EngramTableEntry& table : manifest.engram) {
      tables.push_back({{"layer", table.layer},
                        {"file", table.file},
                        {"rows", table.rows},
                        {"row_bytes", table.row_bytes}});
    }
    out["engram"] = std::move(tables);
  }
  if (!manifest.kept.empty()) {  // absent when nothing is kept
    json kept = json::array();
    for (const KeptTensorsEntry& entry : manifest.kept) {
      kept.push_back({{"file", entry.file},
                      {"about", entry.about},
                      {"tensors", entry.tensors},
                      {"bytes", entry.bytes}});
    }
    out["kept"] = std::move(kept);
  }
  if (manifest.shard_map) {
    json held = json::array();
    for (const auto& [layer, experts] : manifest.shard_map->held) {
      held.push_back({{"layer", layer}, {"experts", experts}});
    }
    out["shard_map"] = {{"num_shards", manifest.shard_map->num_shards},
                        {"shard_index", manifest.shard_map->shard_index},
                        {"held", std::move(held)}};
  }
  return out;
}

absl::StatusOr<Manifest> ParseManifest(std::string_view text, std::string_view source_name) {
  // nlohmann::ordered_json reports syntax errors only by exception; this is the one
  // place WARP catches one, converting it to a Status at the boundary.
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, source_name));
  json root;
  try {
    root = json::parse(text);
  } catch (const json::parse_error& error) {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(source_name), ": malformed JSON at byte ", error.byte, ": ", error.what()));
  } catch (const json::exception& error) {  // out_of_range: a number past a double, e.g. 1e400
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source_name), ": malformed JSON: ", error.what()));
  }
  absl::StatusOr<Manifest> manifest = ParseManifestJson(root);
  if (!manifest.ok()) return Annotate(manifest.status(), source_name);
  WARP_RETURN_IF_ERROR(Annotate(CheckManifest(*manifest), source_name));
  return manifest;
}

uint32_t ExpertsHeld(const BankEntry& bank, const std::optional<ShardMap>& shard_map) {
  if (!shard_map) return bank.num_experts;
  return static_cast<uint32_t>(shard_map->HeldExperts(bank.layer).size());
}

std::span<const uint32_t> ShardMap::HeldExperts(uint32_t layer) const {
  auto it = held.find(layer);
  if (it == held.end()) return {};
  return it->second;
}

}  // namespace warp
