#include "computed/convert/gguf_tokenizer.h"

#include <algorithm>
#include <initializer_list>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/utf8.h"
#include "nlohmann/json.hpp"

namespace warp::computed {
namespace {

using Json = nlohmann::ordered_json;

// llama.cpp's token types (llama_token_type).
constexpr int64_t kTypeNormal = 1, kTypeUnknown = 2, kTypeControl = 3, kTypeUserDefined = 4;

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

bool IsUtf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const utf8::Subpart part = utf8::ScanSequence(s, pos);
    if (!part.complete) return false;
    pos += part.length;
  }
  return true;
}

// Tokens and merges become JSON text (tokenizer.json), which must be UTF-8:
// nlohmann's dump threw on a stray byte (found by tests/fuzz).
absl::StatusOr<std::string> StringAt(const GgufFile& file, const std::string& key,
                                     const GgufArray& array, size_t i) {
  const auto* s = std::get_if<std::string>(&array[i].value);
  if (s == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path().string(), ": ", key, "[", i, "]: must be a string"));
  }
  if (!IsUtf8(*s)) {
    return absl::InvalidArgumentError(
        absl::StrCat(file.path().string(), ": ", key, "[", i, "]: not valid UTF-8"));
  }
  return *s;
}

absl::StatusOr<bool> BoolOr(const GgufFile& file, const std::string& key, bool fallback) {
  auto it = file.metadata().find(key);
  if (it == file.metadata().end()) return fallback;
  if (const auto* b = std::get_if<bool>(&it->second.value)) return *b;
  return absl::InvalidArgumentError(
      absl::StrCat(file.path().string(), ": ", key, ": must be a bool"));
}

// tokenizer.ggml.tokens with their types (and scores, for SentencePiece), by id.
struct Vocabulary {
  std::vector<std::string> tokens;
  std::vector<int64_t> types;
  std::vector<double> scores;
  // nlohmann::json (a std::map), not ordered_json, whose lookups are linear:
  // 150k tokens would take a minute. The first id of a repeated string.
  nlohmann::json ids = nlohmann::json::object();
};

absl::StatusOr<Vocabulary> ReadVocabulary(const GgufFile& file, bool with_scores) {
  const std::string where = file.path().string();
  WARP_ASSIGN_OR_RETURN(const GgufValue* tokens_value,
                        Array(file, "tokenizer.ggml.tokens", /*required=*/true));
  WARP_ASSIGN_OR_RETURN(const GgufValue* types_value,
                        Array(file, "tokenizer.ggml.token_type", /*required=*/false));
  WARP_ASSIGN_OR_RETURN(const GgufValue* scores_value,
                        Array(file, "tokenizer.ggml.scores", /*required=*/with_scores));
  const GgufArray& tokens = std::get<GgufArray>(tokens_value->value);
  for (const auto& [key, value] : {std::pair{"tokenizer.ggml.token_type", types_value},
                                   std::pair{"tokenizer.ggml.scores", scores_value}}) {
    if (value == nullptr) continue;
    const size_t size = std::get<GgufArray>(value->value).size();
    if (size != tokens.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", key, " has ", size, " entries for ", tokens.size(), " tokens"));
    }
  }
  Vocabulary v;
  v.tokens.reserve(tokens.size());
  for (size_t id = 0; id < tokens.size(); ++id) {
    WARP_ASSIGN_OR_RETURN(std::string token, StringAt(file, "tokenizer.ggml.tokens", tokens, id));
    if (!v.ids.contains(token)) v.ids[token] = id;
    v.tokens.push_back(std::move(token));
    int64_t type = kTypeNormal;
    if (types_value != nullptr) {
      const GgufValue& t = std::get<GgufArray>(types_value->value)[id];
      if (const auto* i = std::get_if<int64_t>(&t.value)) type = *i;
      if (const auto* u = std::get_if<uint64_t>(&t.value)) type = int64_t(*u);
    }
    v.types.push_back(type);
    if (with_scores) {
      const GgufValue& s = std::get<GgufArray>(scores_value->value)[id];
      const auto* score = std::get_if<double>(&s.value);
      if (score == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": tokenizer.ggml.scores[", id, "]: must be a float"));
      }
      v.scores.push_back(*score);
    }
  }
  return v;
}

// CONTROL (and SentencePiece's UNKNOWN) tokens are special added tokens,
// USER_DEFINED plain added tokens, as Hugging Face's releases list them.
Json AddedTokens(const Vocabulary& v) {
  Json added = Json::array();
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const int64_t type = v.types[id];
    if (type != kTypeControl && type != kTypeUserDefined && type != kTypeUnknown) continue;
    added.push_back({{"id", id},
                     {"content", v.tokens[id]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", type != kTypeUserDefined}});
  }
  return added;
}

// A special token: the tokenizer.ggml key of its id and the
// tokenizer_config.json key of its string.
struct SpecialRole {
  const char* ggml_key;
  const char* config_key;
};
constexpr SpecialRole kBos = {"tokenizer.ggml.bos_token_id", "bos_token"};
constexpr SpecialRole kEos = {"tokenizer.ggml.eos_token_id", "eos_token"};
constexpr SpecialRole kUnk = {"tokenizer.ggml.unknown_token_id", "unk_token"};

// tokenizer_config.json: the `roles`' tokens by their strings, for templates,
// and add_bos_token (llama.cpp's default per model when the key is absent).
absl::StatusOr<Json> SpecialTokensConfig(const GgufFile& file, const Vocabulary& v,
                                         std::initializer_list<SpecialRole> roles,
                                         bool add_bos_default) {
  Json config = Json::object();
  for (const SpecialRole& role : roles) {
    if (!file.metadata().contains(role.ggml_key)) continue;
    WARP_ASSIGN_OR_RETURN(uint64_t id, file.Uint(role.ggml_key));
    if (id >= v.tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat(file.path().string(), ": ", role.ggml_key, " ",
                                                     id, " is not below ", v.tokens.size(),
                                                     " tokens"));
    }
    config[role.config_key] = v.tokens[id];
  }
  WARP_ASSIGN_OR_RETURN(bool add_bos,
                        BoolOr(file, "tokenizer.ggml.add_bos_token", add_bos_default));
  config["add_bos_token"] = add_bos;
  return config;
}

// The post-processor: BOS before the text when add_bos_token, else `otherwise`.
Json PostProcessor(const Json& config, const Vocabulary& v, Json otherwise) {
  if (!config["add_bos_token"].get<bool>() || !config.contains("bos_token")) return otherwise;
  const std::string bos = config["bos_token"];
  const Json bos_piece = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
  return {{"type", "TemplateProcessing"},
          {"single", {bos_piece, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair",
           {bos_piece,
            {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
            bos_piece,
            {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
          {"special_tokens", {{bos, {{"id", bos}, {"ids", {v.ids[bos]}}, {"tokens", {bos}}}}}}};
}

Json BpeModel(const Vocabulary& v, Json merges, bool byte_fallback, bool ignore_merges,
              Json unk_token) {
  return {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", std::move(unk_token)},
          {"continuing_subword_prefix", ""},
          {"end_of_word_suffix", ""},
          {"fuse_unk", byte_fallback},
          {"byte_fallback", byte_fallback},
          {"ignore_merges", ignore_merges},
          {"vocab", v.ids},
          {"merges", std::move(merges)}};
}

// `gpt2`: byte-level BPE with the merges as stored and the pre-tokenizer that
// tokenizer.ggml.pre names.
absl::StatusOr<GgufTokenizerFiles> ByteLevelBpe(const GgufFile& file) {
  const std::string where = file.path().string();
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
  WARP_ASSIGN_OR_RETURN(Vocabulary v, ReadVocabulary(file, /*with_scores=*/false));
  WARP_ASSIGN_OR_RETURN(const GgufValue* merges_value,
                        Array(file, "tokenizer.ggml.merges", /*required=*/true));
  const GgufArray& merges = std::get<GgufArray>(merges_value->value);
  Json merge_list = Json::array();
  for (size_t i = 0; i < merges.size(); ++i) {
    WARP_ASSIGN_OR_RETURN(std::string merge, StringAt(file, "tokenizer.ggml.merges", merges, i));
    merge_list.push_back(std::move(merge));
  }
  Json pre_tokenizers = Json::parse(pre->splits);
  pre_tokenizers.push_back(ByteLevel(pre->byte_level_trim));
  // Byte-level BPE has no unknown token.
  WARP_ASSIGN_OR_RETURN(Json config,
                        SpecialTokensConfig(file, v, {kBos, kEos}, /*add_bos_default=*/false));
  const Json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", AddedTokens(v)},
      {"normalizer", Json::parse(pre->normalizer)},
      {"pre_tokenizer", {{"type", "Sequence"}, {"pretokenizers", pre_tokenizers}}},
      {"post_processor", PostProcessor(config, v, ByteLevel(false))},
      {"decoder", ByteLevel(true)},
      {"model",
       BpeModel(v, std::move(merge_list), /*byte_fallback=*/false, pre->ignore_merges, nullptr)}};
  return GgufTokenizerFiles{.tokenizer_json = tokenizer.dump(),
                            .tokenizer_config_json = config.dump(1)};
}

// Offsets of the UTF-8 code points of `s` after the first.
std::vector<size_t> InnerCodePointBoundaries(const std::string& s) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) cuts.push_back(i);
  }
  return cuts;
}

// SentencePiece BPE stores scores, not merges: llama.cpp's llm_tokenizer_spm
// merges the adjacent pair whose concatenation is the highest-scoring token.
// As a merge list (transformers' SentencePieceExtractor): every split of every
// token into two tokens, ranked by the token's score, highest first; the splits
// of one token by the ids of their halves.
Json MergesFromScores(const Vocabulary& v) {
  struct Merge {
    double score;
    size_t id, left, right;
    std::string left_text, right_text;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < v.tokens.size(); ++id) {
    const std::string& token = v.tokens[id];
    for (size_t cut : InnerCodePointBoundaries(token)) {
      auto left = v.ids.find(token.substr(0, cut));
      auto right = v.ids.find(token.substr(cut));
      if (left == v.ids.end() || right == v.ids.end()) continue;
      merges.push_back({v.scores[id], id, left->get<size_t>(), right->get<size_t>(),
                        token.substr(0, cut), token.substr(cut)});
    }
  }
  std::stable_sort(merges.begin(), merges.end(), [](const Merge& a, const Merge& b) {
    if (a.score != b.score) return a.score > b.score;
    return std::tie(a.id, a.left, a.right) < std::tie(b.id, b.left, b.right);
  });
  Json list = Json::array();
  for (Merge& m : merges) list.push_back({std::move(m.left_text), std::move(m.right_text)});
  return list;
}

// `llama`: SentencePiece BPE (Llama 2, Mistral, Mixtral) as their Hugging Face
// tokenizer.json spells it: "▁" for spaces (and before the text when
// add_space_prefix), merges from the scores, <0xXX> byte fallback.
absl::StatusOr<GgufTokenizerFiles> SentencePieceBpe(const GgufFile& file) {
  WARP_ASSIGN_OR_RETURN(Vocabulary v, ReadVocabulary(file, /*with_scores=*/true));
  WARP_ASSIGN_OR_RETURN(bool add_space_prefix,
                        BoolOr(file, "tokenizer.ggml.add_space_prefix", true));
  WARP_ASSIGN_OR_RETURN(Json config,
                        SpecialTokensConfig(file, v, {kBos, kEos, kUnk}, /*add_bos_default=*/true));
  // llama.cpp's SentencePiece default when the key is absent: id 0.
  if (!config.contains("unk_token") && !v.tokens.empty()) config["unk_token"] = v.tokens[0];
  const Json replace_space = {
      {"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
  Json normalizers = Json::array();
  if (add_space_prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", "\u2581"}});
  normalizers.push_back(replace_space);
  Json decoders =
      Json::array({{{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}},
                   {{"type", "ByteFallback"}},
                   {{"type", "Fuse"}}});
  if (add_space_prefix) {
    decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  const Json unk = config.contains("unk_token") ? config["unk_token"] : Json(nullptr);
  const Json tokenizer = {{"version", "1.0"},
                          {"truncation", nullptr},
                          {"padding", nullptr},
                          {"added_tokens", AddedTokens(v)},
                          {"normalizer", {{"type", "Sequence"}, {"normalizers", normalizers}}},
                          {"pre_tokenizer", nullptr},
                          {"post_processor", PostProcessor(config, v, nullptr)},
                          {"decoder", {{"type", "Sequence"}, {"decoders", decoders}}},
                          {"model", BpeModel(v, MergesFromScores(v), /*byte_fallback=*/true,
                                             /*ignore_merges=*/false, unk)}};
  return GgufTokenizerFiles{.tokenizer_json = tokenizer.dump(),
                            .tokenizer_config_json = config.dump(1)};
}

}  // namespace

absl::StatusOr<std::optional<GgufTokenizerFiles>> GgufTokenizer(const GgufFile& file) {
  if (!file.metadata().contains("tokenizer.ggml.model")) return std::nullopt;
  WARP_ASSIGN_OR_RETURN(std::string model, file.String("tokenizer.ggml.model"));
  if (model == "gpt2") return ByteLevelBpe(file);
  if (model == "llama") return SentencePieceBpe(file);
  return absl::UnimplementedError(absl::StrCat(
      file.path().string(), ": tokenizer.ggml.model \"", model,
      "\" is not converted (gpt2: byte-level BPE, llama: SentencePiece BPE); give token ids, or a "
      "tokenizer.json"));
}

}  // namespace warp::computed
