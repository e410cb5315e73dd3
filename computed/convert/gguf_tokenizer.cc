#include "computed/convert/gguf_tokenizer.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace warp::computed {
namespace {

using Json = nlohmann::ordered_json;

// llama.cpp's token types (llama_token_type).
constexpr int64_t kTypeControl = 3, kTypeUserDefined = 4;

// The pre-tokenizer and normalizer of each tokenizer.ggml.pre, as the Hugging
// Face tokenizer.json of the release llama.cpp's converter names so has them
// (the splits of llama-vocab.cpp are these regexes).
struct PreTokenizer {
  const char* name;
  const char* normalizer;  // JSON, or "null"
  const char* splits;      // JSON array of Split pre-tokenizers
  bool byte_level_trim;    // ByteLevel's trim_offsets (offsets only; ids unaffected)
  bool ignore_merges;      // BPE: a whole pre-token in the vocabulary is one token
};

constexpr PreTokenizer kPreTokenizers[] = {
    {"qwen2", R"({"type": "NFC"})",
     R"([{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}])",
     false, false},
    {"llama-bpe", "null",
     R"([{"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}])",
     true, true},
    {"deepseek-v3", R"({"type": "Sequence", "normalizers": []})",
     R"([{"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": false}, {"type": "Split", "pattern": {"Regex": "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"}, "behavior": "Isolated", "invert": false}, {"type": "Split", "pattern": {"Regex": "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}])",
     true, false},
    {"gpt-4o", "null",
     R"([{"type": "Split", "pattern": {"Regex": "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"}, "behavior": "Isolated", "invert": false}])",
     true, true},
};

Json ByteLevel(bool trim_offsets) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", trim_offsets},
          {"use_regex", false}};
}

absl::StatusOr<const GgufValue*> Array(const GgufFile& file, const std::string& key,
                                       bool required) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end()) {
    if (!required) return nullptr;
    return absl::InvalidArgumentError(absl::StrCat(file.path().string(), ": ", key, ": missing"));
  }
  if (!std::holds_alternative<GgufArray>(it->second.value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path().string(), ": ", key, ": must be an array"));
  }
  return &it->second;
}

absl::StatusOr<std::string> StringAt(const GgufFile& file, const std::string& key,
                                     const GgufArray& array, size_t i) {
  if (const auto* s = std::get_if<std::string>(&array[i].value)) return *s;
  return absl::InvalidArgumentError(
      absl::StrCat(file.path().string(), ": ", key, "[", i, "]: must be a string"));
}

}  // namespace

absl::StatusOr<std::optional<GgufTokenizerFiles>> GgufTokenizer(const GgufFile& file) {
  const std::string where = file.path().string();
  if (!file.metadata().contains("tokenizer.ggml.model")) return std::nullopt;
  WARP_ASSIGN_OR_RETURN(std::string model, file.String("tokenizer.ggml.model"));
  if (model != "gpt2") {
    return absl::UnimplementedError(absl::StrCat(
        where, ": tokenizer.ggml.model \"", model,
        "\" is not converted (gpt2, byte-level BPE); give token ids, or a tokenizer.json"));
  }
  std::string pre_name = "default";
  if (file.metadata().contains("tokenizer.ggml.pre")) {
    WARP_ASSIGN_OR_RETURN(pre_name, file.String("tokenizer.ggml.pre"));
  }
  const PreTokenizer* pre = nullptr;
  std::string known;
  for (const PreTokenizer& p : kPreTokenizers) {
    if (pre_name == p.name) pre = &p;
    absl::StrAppend(&known, known.empty() ? "" : ", ", p.name);
  }
  if (pre == nullptr) {
    return absl::UnimplementedError(absl::StrCat(where, ": tokenizer.ggml.pre \"", pre_name,
                                                 "\" is not supported (", known, ")"));
  }
  WARP_ASSIGN_OR_RETURN(const GgufValue* tokens_value,
                        Array(file, "tokenizer.ggml.tokens", /*required=*/true));
  WARP_ASSIGN_OR_RETURN(const GgufValue* merges_value,
                        Array(file, "tokenizer.ggml.merges", /*required=*/true));
  WARP_ASSIGN_OR_RETURN(const GgufValue* types_value,
                        Array(file, "tokenizer.ggml.token_type", /*required=*/false));
  const GgufArray& tokens = std::get<GgufArray>(tokens_value->value);
  const GgufArray& merges = std::get<GgufArray>(merges_value->value);
  const GgufArray* types = types_value ? &std::get<GgufArray>(types_value->value) : nullptr;
  if (types != nullptr && types->size() != tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tokenizer.ggml.token_type has ",
                                                   types->size(), " entries for ", tokens.size(),
                                                   " tokens"));
  }

  // nlohmann::json (a std::map), not ordered_json, whose lookups are linear:
  // 150k tokens would take a minute.
  nlohmann::json vocab = nlohmann::json::object();
  Json added = Json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    WARP_ASSIGN_OR_RETURN(std::string token, StringAt(file, "tokenizer.ggml.tokens", tokens, id));
    int64_t type = 1;
    if (types != nullptr) {
      if (const auto* i = std::get_if<int64_t>(&(*types)[id].value)) type = *i;
      if (const auto* u = std::get_if<uint64_t>(&(*types)[id].value)) type = int64_t(*u);
    }
    if (type == kTypeControl || type == kTypeUserDefined) {
      added.push_back({{"id", id},
                       {"content", token},
                       {"single_word", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"normalized", false},
                       {"special", type == kTypeControl}});
    }
    if (!vocab.contains(token)) vocab[token] = id;
  }
  Json merge_list = Json::array();
  for (size_t i = 0; i < merges.size(); ++i) {
    WARP_ASSIGN_OR_RETURN(std::string merge, StringAt(file, "tokenizer.ggml.merges", merges, i));
    merge_list.push_back(std::move(merge));
  }
  Json pre_tokenizers = Json::parse(pre->splits);
  pre_tokenizers.push_back(ByteLevel(pre->byte_level_trim));

  // BOS and EOS by their token strings, for templates and add_bos_token.
  Json config = Json::object();
  for (const char* role : {"bos", "eos"}) {
    const std::string key = absl::StrCat("tokenizer.ggml.", role, "_token_id");
    if (!file.metadata().contains(key)) continue;
    WARP_ASSIGN_OR_RETURN(uint64_t id, file.Uint(key));
    if (id >= tokens.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", key, " ", id, " is not below ", tokens.size(), " tokens"));
    }
    config[absl::StrCat(role, "_token")] = std::get<std::string>(tokens[id].value);
  }
  bool add_bos = false;
  if (auto it = file.metadata().find("tokenizer.ggml.add_bos_token"); it != file.metadata().end()) {
    if (const auto* b = std::get_if<bool>(&it->second.value)) add_bos = *b;
  }
  config["add_bos_token"] = add_bos;
  Json post = ByteLevel(false);
  if (add_bos && config.contains("bos_token")) {
    const std::string bos = config["bos_token"];
    const Json bos_piece = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
    post = {{"type", "TemplateProcessing"},
            {"single", {bos_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"pair",
             {bos_piece,
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              bos_piece,
              {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
            {"special_tokens", {{bos, {{"id", bos}, {"ids", {vocab[bos]}}, {"tokens", {bos}}}}}}};
  }
  const Json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", Json::parse(pre->normalizer)},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", pre_tokenizers}}},
      {"post_processor", post},
      {"decoder", ByteLevel(true)},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", pre->ignore_merges},
        {"vocab", vocab},
        {"merges", merge_list}}}};
  return GgufTokenizerFiles{.tokenizer_json = tokenizer.dump(),
                            .tokenizer_config_json = config.dump(1)};
}

}  // namespace warp::computed
