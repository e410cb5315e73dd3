#pragma once

// How each GGUF architecture (general.architecture) maps onto a WARP family:
// its hyper-parameter keys onto config.json, its tensor names onto the
// family's Hugging Face names. Names follow llama.cpp (src/llama-arch.cpp,
// convert_hf_to_gguf.py): "blk.N.STEM.weight" per layer, "token_embd",
// "output_norm", "output" outside them. To add an architecture, add a table
// and a config function in gguf_architectures.cc.
//
// Thread-safe: constant tables and pure functions.

#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "computed/convert/gguf.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

// One tensor stem: GGUF "blk.N.<gguf>" is Hugging Face "model.layers.N.<hf>"
// (or, outside layers, "<gguf>" is "<hf>"). For expert tensors `hf` holds
// "{}" where the expert number goes and the GGUF tensor is [experts, rows, cols].
// `llama`'s Q and K rows were permuted by llama.cpp's converter (its rope pairs
// adjacent dims); the importer restores Hugging Face order over these heads.
enum class GgufRopeRows { kAsStored, kQueryHeads, kKeyHeads };

// GgufTensorRule::hf_suffix of a Hugging Face name without one (gpt-oss's sinks).
inline constexpr std::string_view kNoSuffix = "-";

struct GgufTensorRule {
  std::string_view gguf, hf;  // hf empty: read with another rule's tensor (interleave_with)
  bool per_expert = false;
  GgufRopeRows rope_rows = GgufRopeRows::kAsStored;
  // The Hugging Face name's last part when it is not GGUF's ("weight", "bias"):
  // glm4moe's exp_probs_b.bias is mlp.gate.e_score_correction_bias.
  std::string_view hf_suffix = {};
  // A 3-D tensor that is not experts, [a, b, cols], read as [a * b, cols]
  // (deepseek2's per-head attn_k_b and attn_v_b).
  bool merge_rows = false;
  // gpt-oss: llama.cpp stores gate and up apart, the release interleaves their
  // rows (gate j = row 2j, up j = row 2j + 1); this rule's tensor gives the
  // even rows (or elements, for biases) and the layer's `interleave_with` the odd.
  std::string_view interleave_with = {};
};

// The file's hyper-parameters under "<arch>.": reads name the full key. It
// remembers every key it was asked about (read, or tested with Has), every
// default it gave for a missing key, and which config.json key each value
// was put under (Put*), so that the import can warn about the keys nobody
// read (a misspelled key takes a default silently otherwise), log the
// defaults, and name the GGUF key when the config it made is refused.
//
// Thread-compatible: the records are mutable state of one import.
class GgufHparams {
 public:
  GgufHparams(const GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}
  absl::StatusOr<uint64_t> Uint(std::string_view key) const;
  absl::StatusOr<uint64_t> UintOr(std::string_view key, uint64_t fallback) const;
  absl::StatusOr<double> FloatOr(std::string_view key, double fallback) const;
  absl::StatusOr<bool> BoolOr(std::string_view key, bool fallback) const;
  absl::StatusOr<std::string> StringOr(std::string_view key, std::string fallback) const;
  bool Has(std::string_view key) const;
  // The value of `key` (marked as read), or null.
  const GgufValue* Find(std::string_view key) const;
  std::string Key(std::string_view key) const { return absl::StrCat(arch_, ".", std::string(key)); }
  const GgufFile& file() const { return file_; }
  const std::string& arch() const { return arch_; }

  // config[config_key] = the value of `key` (or `fallback`), remembering where it came from.
  absl::Status PutUint(nlohmann::ordered_json& config, const char* config_key,
                       std::string_view key) const;
  absl::Status PutUintOr(nlohmann::ordered_json& config, const char* config_key,
                         std::string_view key, uint64_t fallback) const;
  absl::Status PutFloatOr(nlohmann::ordered_json& config, const char* config_key,
                          std::string_view key, double fallback) const;
  absl::Status PutBoolOr(nlohmann::ordered_json& config, const char* config_key,
                         std::string_view key, bool fallback) const;
  // Notes that config[config_key] was derived from `what` (full GGUF key names).
  void Source(const std::string& config_key, std::string what) const {
    sources_[config_key] = std::move(what);
  }

  // "<arch>.*" keys of the file that no read asked about, sorted.
  std::vector<std::string> UnreadKeys() const;
  // "KEY = VALUE" of each default taken for a missing key, in the order taken.
  const std::vector<std::string>& defaults() const { return defaults_; }
  // config.json key -> the GGUF key(s) its value came from.
  const std::map<std::string, std::string>& sources() const { return sources_; }

 private:
  void Defaulted(std::string_view key, const std::string& value) const;

  const GgufFile& file_;
  std::string arch_;
  mutable std::set<std::string> read_;  // full keys
  mutable std::vector<std::string> defaults_;
  mutable std::map<std::string, std::string> sources_;
};

struct GgufArchitecture {
  std::string_view name;        // general.architecture
  std::string_view model_type;  // the family's config.json model_type
  std::span<const GgufTensorRule> global_tensors, layer_tensors;
  // Layers at and past block_count - <arch>.nextn_predict_layers are
  // multi-token-prediction layers: skipped, as WARP decodes one token a step.
  // config.json from the hyper-parameters; the common keys (sizes, heads,
  // norms, rope, vocab, tied embeddings) are filled before it is called.
  absl::Status (*config)(const GgufHparams& hparams, nlohmann::ordered_json& config);
};

// The map of `name`, or NotFound listing the supported architectures.
absl::StatusOr<const GgufArchitecture*> FindGgufArchitecture(std::string_view name);

}  // namespace warp::computed
