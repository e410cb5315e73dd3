#include "computed/model/families/deepseek_v41.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/config_fields.h"
#include "computed/model/families/deepseek_v4.h"
#include "computed/model/families/family_parts.h"

namespace warp::computed {
namespace {

using namespace config_fields;  // NOLINT
using namespace family_parts;   // NOLINT

constexpr int32_t kNone = SharedCompression::kNone;

std::string Layer(uint32_t layer) { return absl::StrCat("layers.", layer, "."); }

// A list of layer ids: integers in [0, layers), strictly increasing.
absl::StatusOr<std::vector<uint32_t>> LayerIds(const Json& json, const char* key,
                                               uint32_t layers) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_array()) return KeyError(key, "missing (a list of layer ids)");
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& entry = (*it)[i];
    if (!entry.is_number_integer() || entry.get<int64_t>() < 0 ||
        entry.get<int64_t>() >= layers) {
      return KeyError(absl::StrCat(key, "[", i, "]"),
                      absl::StrCat(entry.dump(), " is not a layer (0 .. ", layers - 1, ")"));
    }
    const uint32_t id = entry.get<uint32_t>();
    if (!ids.empty() && id <= ids.back()) {
      return KeyError(absl::StrCat(key, "[", i, "]"),
                      absl::StrCat(id, " does not follow ", ids.back(), " (ids must increase)"));
    }
    ids.push_back(id);
  }
  return ids;
}

// compress_ratios: one per layer (the release lists its DSpark stages' too),
// 0 (the window only) or the positions per compressed entry.
absl::Status ParseRatios(const Json& json, ModelConfig& out) {
  auto it = json.find("compress_ratios");
  if (it == json.end() || !it->is_array() || it->size() < out.num_layers) {
    return KeyError("compress_ratios",
                    absl::StrCat("must list every one of the ", out.num_layers, " layers (has ",
                                 it != json.end() && it->is_array() ? it->size() : 0, ")"));
  }
  out.compressed.layer_rate.assign(out.num_layers, 0);
  out.compressed.layer_kind.assign(out.num_layers, CompressionKind::kNone);
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    const Json& entry = (*it)[layer];
    if (!entry.is_number_integer() || entry.get<int64_t>() < 0 ||
        entry.get<int64_t>() > (1 << 20)) {
      return KeyError(absl::StrCat("compress_ratios[", layer, "]"),
                      absl::StrCat(entry.dump(), " is not a compression ratio"));
    }
    out.compressed.layer_rate[layer] = entry.get<uint32_t>();
  }
  return absl::OkStatus();
}

// The nearest entry of `ids` at or before `layer`, or kNone.
int32_t NearestAtOrBefore(const std::vector<uint32_t>& ids, uint32_t layer) {
  auto it = std::upper_bound(ids.begin(), ids.end(), layer);
  return it == ids.begin() ? kNone : static_cast<int32_t>(*std::prev(it));
}

// kv_source_layer_ids, index_source_layer_ids and the candidate keys, and
// which source each layer reads. Every compressed layer needs a KV source of
// its own ratio at or before it; a source must be compressed, and an index
// source (its group's keys come from its indexer).
absl::Status ParseSources(const Json& json, ModelConfig& out) {
  SharedCompression& sc = out.shared_compression;
  const std::vector<uint32_t>& rate = out.compressed.layer_rate;
  WARP_ASSIGN_OR_RETURN(std::vector<uint32_t> kv,
                        LayerIds(json, "kv_source_layer_ids", out.num_layers));
  WARP_ASSIGN_OR_RETURN(std::vector<uint32_t> index,
                        LayerIds(json, "index_source_layer_ids", out.num_layers));
  for (const auto& [key, ids] : {std::pair{"kv_source_layer_ids", &kv},
                                 std::pair{"index_source_layer_ids", &index}}) {
    for (uint32_t id : *ids) {
      if (rate[id] == 0) {
        return KeyError(key, absl::StrCat("layer ", id, " has compress_ratios[", id,
                                          "] 0: a source must have a compressed branch"));
      }
    }
  }
  for (uint32_t id : kv) {
    if (!std::binary_search(index.begin(), index.end(), id)) {
      return KeyError("kv_source_layer_ids",
                      absl::StrCat("layer ", id,
                                   " is not in index_source_layer_ids: its group's index keys "
                                   "come from its indexer"));
    }
  }
  sc.kv_source.assign(out.num_layers, kNone);
  sc.index_source.assign(out.num_layers, kNone);
  for (uint32_t layer = 0; layer < out.num_layers; ++layer) {
    if (rate[layer] == 0) continue;
    const int32_t source = NearestAtOrBefore(kv, layer);
    const std::string where = absl::StrCat("compress_ratios[", layer, "]");
    if (source == kNone) {
      return KeyError(where, absl::StrCat(rate[layer], ": layer ", layer,
                                          " reads a compressed cache, and no "
                                          "kv_source_layer_ids entry is at or before it"));
    }
    if (rate[source] != rate[layer]) {
      return KeyError(where, absl::StrCat(rate[layer], " disagrees with its KV source layer ",
                                          source, "'s ratio ", rate[source]));
    }
    sc.kv_source[layer] = source;
    sc.index_source[layer] = NearestAtOrBefore(index, layer);
  }
  // Absent: the last KV source; negative: no second level.
  const int64_t candidate =
      json.contains("candidate_source_layer_id") && !json["candidate_source_layer_id"].is_null()
          ? json["candidate_source_layer_id"].get<int64_t>()
          : (kv.empty() ? -1 : int64_t{kv.back()});
  if (candidate >= 0) {
    if (!std::binary_search(index.begin(), index.end(), candidate)) {
      return KeyError("candidate_source_layer_id",
                      absl::StrCat(candidate, " is not in index_source_layer_ids"));
    }
    sc.candidate_source = static_cast<int32_t>(candidate);
  }
  WARP_ASSIGN_OR_RETURN(sc.candidate_topk_blocks, UintOr(json, "candidate_topk_blocks", 2048));
  WARP_ASSIGN_OR_RETURN(sc.candidate_block_size, UintOr(json, "candidate_block_size", 8));
  if (sc.candidate_topk_blocks == 0 || sc.candidate_block_size == 0) {
    return KeyError("candidate_topk_blocks", "and candidate_block_size must be positive");
  }
  return absl::OkStatus();
}

// engram_*: the layers, their tables' rows and the hash's shape.
absl::Status ParseEngram(const Json& json, ModelConfig& out) {
  EngramConfig& e = out.engram;
  if (!json.contains("engram_layer_ids") || json["engram_layer_ids"].is_null()) {
    return absl::OkStatus();  // no engram
  }
  WARP_ASSIGN_OR_RETURN(e.layers, LayerIds(json, "engram_layer_ids", out.num_layers));
  if (e.layers.empty()) return absl::OkStatus();
  auto rows = json.find("engram_num_embeddings");
  if (rows == json.end() || !rows->is_array() || rows->size() != e.layers.size()) {
    return KeyError("engram_num_embeddings",
                    absl::StrCat("must list the table rows of each of the ", e.layers.size(),
                                 " engram_layer_ids"));
  }
  for (size_t i = 0; i < rows->size(); ++i) {
    const Json& entry = (*rows)[i];
    if (!entry.is_number_integer() || entry.get<int64_t>() <= 0) {
      return KeyError(absl::StrCat("engram_num_embeddings[", i, "]"),
                      absl::StrCat(entry.dump(), " is not a row count"));
    }
    e.table_rows.push_back(entry.get<uint64_t>());
  }
  WARP_ASSIGN_OR_RETURN(e.bucket_base, UintOr(json, "engram_vocab_size", 0));
  WARP_ASSIGN_OR_RETURN(e.max_ngram, UintOr(json, "engram_max_ngram_size", 0));
  WARP_ASSIGN_OR_RETURN(e.heads, UintOr(json, "engram_n_heads", 0));
  WARP_ASSIGN_OR_RETURN(e.head_dim, UintOr(json, "engram_head_dim", 0));
  WARP_ASSIGN_OR_RETURN(e.compressed_vocab, Uint(json, "engram_compressed_vocab_size"));
  // The release spells it engram_pad_token_id; transformers engram_pad_id.
  WARP_ASSIGN_OR_RETURN(const uint32_t pad_id, UintOr(json, "engram_pad_id", 2));
  WARP_ASSIGN_OR_RETURN(e.pad_token, UintOr(json, "engram_pad_token_id", pad_id));
  if (e.bucket_base < 2) return KeyError("engram_vocab_size", "must be at least 2");
  if (e.max_ngram < 2) return KeyError("engram_max_ngram_size", "must be at least 2");
  if (e.heads == 0) return KeyError("engram_n_heads", "must be positive");
  if (e.head_dim == 0 || e.head_dim % 32 != 0) {
    return KeyError("engram_head_dim", "must be a positive multiple of 32 (one scale per 32)");
  }
  if (e.compressed_vocab == 0) return KeyError("engram_compressed_vocab_size", "must be positive");
  if (e.pad_token >= out.vocab_size) {
    return KeyError("engram_pad_token_id", absl::StrCat(e.pad_token, " is not a token"));
  }
  return absl::OkStatus();
}

class DeepseekV41 : public SwiGluFamily {
 public:
  Architecture arch() const override { return Architecture::kDeepseekV41; }
  std::string_view name() const override { return "deepseek_v41"; }
  std::vector<std::string_view> model_types() const override {
    return {"deepseek_v41", "deepseek_v41_text"};
  }

  // The text model's keys, in text_config or (a text config alone) at the top.
  absl::StatusOr<const Json*> TextConfig(const Json& config) const override {
    auto it = config.find("text_config");
    return it != config.end() && it->is_object() ? &*it : &config;
  }

  absl::Status Parse(const Json& json, ModelConfig& out) const override {
    WARP_RETURN_IF_ERROR(deepseek_v4::ParseCommon(json, out));
    WARP_ASSIGN_OR_RETURN(double temperature, DoubleOr(json, "gate_temp", 1.0));
    if (!(temperature > 0)) return KeyError("gate_temp", "must be positive");
    out.router_temperature = static_cast<float>(temperature);
    out.hash_layer.assign(out.num_layers, false);
    WARP_RETURN_IF_ERROR(ParseRatios(json, out));
    WARP_RETURN_IF_ERROR(ParseSources(json, out));
    return ParseEngram(json, out);
  }

  bool ReleaseBlockQuantizes(std::string_view name) const override {
    return deepseek_v4::ReleaseBlockQuantizes(name);
  }
  // DSpark, the release's three speculative-decoding stages: a drafter for a
  // later issue, kept without reconverting.
  std::optional<KeptTensorsRule> KeptTensors() const override {
    return KeptTensorsRule{.file = "dspark.safetensors",
                           .about = "DSpark speculative-decoding stages (mtp.*)",
                           .prefixes = {"mtp."}};
  }

  ModelPlan Plan(const ModelConfig& c) const override {
    ModelPlan plan{.residual = ResidualKind::kHyperConnections,
                   .embed = "embed.weight",
                   .final_norm = "norm.weight",
                   .head = c.tie_word_embeddings ? "embed.weight" : "head.weight",
                   .hc_single_pass = true};
    const SharedCompression& sc = c.shared_compression;
    for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
      const std::string p = Layer(layer);
      const uint32_t rate = c.compressed.layer_rate[layer];
      LayerPlan l = deepseek_v4::Layer(c, p);
      l.mixer = MixerPlan{.prefix = p + "attn.",
                          .rope = deepseek_v4::Rope(c, rate > 0),
                          .params = SharedCompressedMqaParams{
                              .layer = layer,
                              .sliding_window = c.sliding_window,
                              .compress_rate = rate,
                              .kv_source = sc.kv_source[layer],
                              .index_source = sc.index_source[layer],
                              .candidate_source = sc.candidate_source}};
      const auto engram = std::find(c.engram.layers.begin(), c.engram.layers.end(), layer);
      if (engram != c.engram.layers.end()) {
        l.engram = {.prefix = p + "engram.",
                    .table = static_cast<uint32_t>(engram - c.engram.layers.begin())};
      }
      plan.layers.push_back(std::move(l));
    }
    return plan;
  }

  // The V4 layout: ffn.experts.E.w1|w3|w2, FP4 codes with `.scale` E8M0.
  CheckpointSlice ExpertSlice(const ModelConfig&, uint32_t layer, uint32_t expert,
                              std::string_view matrix) const override {
    return deepseek_v4::ExpertSlice(layer, expert, matrix);
  }
};

}  // namespace

const ModelFamily& DeepseekV41Family() {
  static const DeepseekV41 family;
  return family;
}

}  // namespace warp::computed
