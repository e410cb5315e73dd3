// BPE merging and the tokenizer.json options on hand-written tiny
// tokenizers, with expectations worked out by hand from Hugging Face's rules.

#include <fstream>
#include <string>
#include <vector>

#include "computed/text/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::text {
namespace {

using Json = nlohmann::json;

// Tokens by id: the vocab of every tokenizer below.
const std::vector<std::string>& Vocab() {
  static const std::vector<std::string> vocab = {
      "<unk>", "<s>", "</s>", "a",    "b",      "c",      "d", "ab",  "bc",     "abc",    // 0-9
      "cd",    "aa",  "aaaa", "abcd", "<0xC3>", "<0xA9>", "x", "##b", "ab</w>", "b</w>",  // 10-19
  };
  return vocab;
}

Json TinyTokenizer() {
  Json vocab = Json::object();
  for (size_t id = 0; id < Vocab().size(); ++id) vocab[Vocab()[id]] = id;
  return {{"added_tokens",
           {{{"id", 1}, {"content", "<s>"}, {"special", true}},
            {{"id", 2}, {"content", "</s>"}, {"special", true}}}},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "WhitespaceSplit"}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single",
             {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
              {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}}}},
            {"special_tokens",
             {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}},
              {"</s>", {{"id", "</s>"}, {"ids", {2}}, {"tokens", {"</s>"}}}}}}}},
          {"decoder",
           {{"type", "Sequence"}, {"decoders", {{{"type", "ByteFallback"}}, {{"type", "Fuse"}}}}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", vocab},
            // rank 0 first: "b c" outranks "a b", so "abcd" becomes "a bc d" first.
            {"merges", {"b c", "a b", "a bc", "c d", "a a", "aa aa"}},
            {"byte_fallback", true},
            {"unk_token", "<unk>"},
            {"fuse_unk", true}}}};
}

class BpeModelTest : public ::testing::Test {
 protected:
  std::unique_ptr<Tokenizer> Load(const Json& json) {
    const std::filesystem::path path = dir_ / "tokenizer.json";
    std::ofstream(path) << json.dump();
    absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::Load(path);
    EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
    return tokenizer.ok() ? *std::move(tokenizer) : nullptr;
  }
  static std::vector<int32_t> Encode(const Tokenizer& tokenizer, std::string_view text,
                                     bool add_special_tokens = false) {
    absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(text, add_special_tokens);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.value_or(std::vector<int32_t>{});
  }
  warp::testing::TempDir dir_;
};

TEST_F(BpeModelTest, LowestRankMergesFirst) {
  auto tokenizer = Load(TinyTokenizer());
  // a b c d: "b c" (rank 0) -> a bc d; "a bc" (rank 2) -> abc d. "ab cd" never forms.
  EXPECT_EQ(Encode(*tokenizer, "abcd"), (std::vector<int32_t>{9, 6}));
  EXPECT_EQ(Encode(*tokenizer, "cd ab"), (std::vector<int32_t>{10, 7}));
}

TEST_F(BpeModelTest, EqualRanksMergeLeftmostFirst) {
  auto tokenizer = Load(TinyTokenizer());
  EXPECT_EQ(Encode(*tokenizer, "aaa"), (std::vector<int32_t>{11, 3}));  // aa a, not a aa
  EXPECT_EQ(Encode(*tokenizer, "aaaa"), (std::vector<int32_t>{12}));    // aa aa -> aaaa
  EXPECT_EQ(Encode(*tokenizer, "aaaaa"), (std::vector<int32_t>{12, 3}));
}

TEST_F(BpeModelTest, ByteFallbackAndFusedUnk) {
  auto tokenizer = Load(TinyTokenizer());
  // "é" is C3 A9, both byte tokens exist; "€" (E2 82 AC) has none -> unk,
  // and consecutive unknowns fuse into one unk.
  EXPECT_EQ(Encode(*tokenizer,
                   "a\xC3\xA9"
                   "b"),
            (std::vector<int32_t>{3, 14, 15, 4}));
  EXPECT_EQ(Encode(*tokenizer,
                   "a\xE2\x82\xAC\xE2\x82\xAC"
                   "b"),
            (std::vector<int32_t>{3, 0, 4}));
  absl::StatusOr<std::string> decoded = tokenizer->Decode({3, 14, 15, 4});
  WARP_ASSERT_OK(decoded);
  EXPECT_EQ(*decoded,
            "a\xC3\xA9"
            "b");
  decoded = tokenizer->Decode({3, 14, 4});  // an invalid byte run: one U+FFFD per token
  WARP_ASSERT_OK(decoded);
  EXPECT_EQ(*decoded,
            "a\xEF\xBF\xBD"
            "b");
}

TEST_F(BpeModelTest, UnfusedUnkAndNoUnk) {
  Json json = TinyTokenizer();
  json["model"]["fuse_unk"] = false;
  json["model"]["byte_fallback"] = false;
  auto tokenizer = Load(json);
  EXPECT_EQ(Encode(*tokenizer, "a\xC3\xA9\xC3\xA9"), (std::vector<int32_t>{3, 0, 0}));
  // Without an unk token the character is dropped before merging, as in
  // tokenizers (Rust): its neighbours then merge.
  json["model"]["unk_token"] = nullptr;
  tokenizer = Load(json);
  EXPECT_EQ(Encode(*tokenizer,
                   "a\xC3\xA9"
                   "b"),
            (std::vector<int32_t>{7}));
}

TEST_F(BpeModelTest, IgnoreMergesTakesWholeVocabPieces) {
  Json json = TinyTokenizer();
  EXPECT_EQ(Encode(*Load(json), "abcd"), (std::vector<int32_t>{9, 6}));
  json["model"]["ignore_merges"] = true;
  EXPECT_EQ(Encode(*Load(json), "abcd"), (std::vector<int32_t>{13}));
}

TEST_F(BpeModelTest, SubwordPrefixAndWordSuffix) {
  Json json = TinyTokenizer();
  json["model"]["continuing_subword_prefix"] = "##";
  json["model"]["merges"] = {"a ##b"};
  EXPECT_EQ(Encode(*Load(json), "ab"), (std::vector<int32_t>{7}));  // a + ##b -> ab
  json = TinyTokenizer();
  json["model"]["end_of_word_suffix"] = "</w>";
  json["model"]["merges"] = {"a b</w>"};
  EXPECT_EQ(Encode(*Load(json), "ab"), (std::vector<int32_t>{18}));  // a + b</w> -> ab</w>
}

TEST_F(BpeModelTest, PostProcessorOnlyWithAddSpecialTokens) {
  auto tokenizer = Load(TinyTokenizer());
  EXPECT_EQ(Encode(*tokenizer, "ab"), (std::vector<int32_t>{7}));
  EXPECT_EQ(Encode(*tokenizer, "ab", true), (std::vector<int32_t>{1, 7, 2}));
  EXPECT_EQ(Encode(*tokenizer, "", true), (std::vector<int32_t>{1, 2}));
  absl::StatusOr<std::string> decoded = tokenizer->Decode({1, 7, 2}, false);
  WARP_ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, "<s>ab</s>");
  decoded = tokenizer->Decode({1, 7, 2}, /*skip_special_tokens=*/true);
  WARP_ASSERT_OK(decoded);
  EXPECT_EQ(*decoded, "ab");
  EXPECT_TRUE(tokenizer->IsSpecial(1));
  EXPECT_FALSE(tokenizer->IsSpecial(7));
  EXPECT_EQ(tokenizer->TokenToId("</s>"), 2);
  EXPECT_EQ(tokenizer->TokenToId("abc"), 9);
  EXPECT_EQ(tokenizer->TokenToId("zzz"), std::nullopt);
}

TEST_F(BpeModelTest, AddedTokensLongestFirstWithStripAndSingleWord) {
  Json json = TinyTokenizer();
  json["added_tokens"] = {
      {{"id", 20}, {"content", "<x>"}, {"special", true}},
      {{"id", 21}, {"content", "<x>y"}, {"special", false}},
      {{"id", 22}, {"content", "[L]"}, {"lstrip", true}},
      {{"id", 23}, {"content", "[R]"}, {"rstrip", true}},
      {{"id", 24}, {"content", "cd"}, {"single_word", true}},
  };
  auto tokenizer = Load(json);
  EXPECT_EQ(Encode(*tokenizer, "a<x>yb<x>"), (std::vector<int32_t>{3, 21, 4, 20}));
  // lstrip eats the spaces before, rstrip those after; WhitespaceSplit would
  // drop them anyway, so check via what is left: nothing between.
  EXPECT_EQ(Encode(*tokenizer, "a  [L]b"), (std::vector<int32_t>{3, 22, 4}));
  EXPECT_EQ(Encode(*tokenizer, "a[R]  b"), (std::vector<int32_t>{3, 23, 4}));
  // single_word: "cd" alone is the added token; inside "acd" it is not.
  EXPECT_EQ(Encode(*tokenizer, "a cd"), (std::vector<int32_t>{3, 24}));
  EXPECT_EQ(Encode(*tokenizer, "acd"), (std::vector<int32_t>{3, 10}));
  EXPECT_EQ(tokenizer->vocab_size(), 25);
}

TEST_F(BpeModelTest, NormalizedAddedTokensMatchAfterNormalizing) {
  Json json = TinyTokenizer();
  json["normalizer"] = {{"type", "Lowercase"}};
  json["added_tokens"] = {{{"id", 20}, {"content", "<X>"}, {"normalized", true}},
                          {{"id", 21}, {"content", "<Y>"}, {"normalized", false}}};
  auto tokenizer = Load(json);
  // "<X>" is matched as "<x>" in the lowercased text; "<Y>" only as written.
  EXPECT_EQ(Encode(*tokenizer, "A<x>B"), (std::vector<int32_t>{3, 20, 4}));
  EXPECT_EQ(Encode(*tokenizer, "A<Y>B"), (std::vector<int32_t>{3, 21, 4}));
  // "<y>" is no added token: "<", "y", ">" are unknown and fuse into one unk.
  EXPECT_EQ(Encode(*tokenizer, "a<y>b"), (std::vector<int32_t>{3, 0, 4}));
}

TEST_F(BpeModelTest, PairFormMergesAreTheSame) {
  Json json = TinyTokenizer();
  Json pairs = Json::array();
  for (const auto& merge : json["model"]["merges"]) {
    const std::string text = merge.get<std::string>();
    pairs.push_back({text.substr(0, text.find(' ')), text.substr(text.find(' ') + 1)});
  }
  json["model"]["merges"] = pairs;
  EXPECT_EQ(Encode(*Load(json), "abcd aaa"), (std::vector<int32_t>{9, 6, 11, 3}));
}

}  // namespace
}  // namespace warp::text
