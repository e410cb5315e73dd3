// Unit tests of the components: regex translation, UTF-8, split behaviors,
// pre-tokenizers, normalizers, and tiktoken merging against a naive version.

#include <random>
#include <string>
#include <vector>

#include "computed/text/normalizer.h"
#include "computed/text/pre_tokenizer.h"
#include "computed/text/regex.h"
#include "computed/text/regex_translate.h"
#include "computed/text/tiktoken_patterns.h"
#include "computed/text/utf8.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/text/families.h"
#include "tests/text/text_test_util.h"

namespace warp::text {
namespace {

using Json = nlohmann::json;
using Pieces = std::vector<std::string>;

std::string Translate(std::string_view pattern, RegexDialect dialect = RegexDialect::kRust) {
  absl::StatusOr<std::string> translated = TranslateRegex(pattern, dialect);
  EXPECT_TRUE(translated.ok()) << translated.status();
  return translated.value_or("");
}

Pieces FindAll(std::string_view pattern, std::string_view text,
               RegexDialect dialect = RegexDialect::kRust) {
  absl::StatusOr<std::unique_ptr<Regex>> regex = Regex::Compile(pattern, dialect);
  EXPECT_TRUE(regex.ok()) << regex.status();
  if (!regex.ok()) return {};
  absl::StatusOr<std::vector<Match>> matches = (*regex)->FindAll(text);
  EXPECT_TRUE(matches.ok()) << matches.status();
  Pieces pieces;
  for (const Match& match : matches.value_or(std::vector<Match>{})) {
    pieces.emplace_back(text.substr(match.begin, match.end - match.begin));
  }
  return pieces;
}

TEST(RegexTranslateTest, ClassIntersectionAndNestingBecomeLookaheads) {
  EXPECT_EQ(Translate(R"([\p{Lu}\p{Lo}&&[^\p{Han}]]+)"), R"((?:(?=[^\p{Han}])[\p{Lu}\p{Lo}])+)");
  EXPECT_EQ(Translate("[a[bc]]"), "(?:[a]|[bc])");
  EXPECT_EQ(Translate("[^a[bc]]"), "(?:(?!(?:[a]|[bc]))(?s:.))");
  EXPECT_EQ(Translate("[a-z&&[^aeiou]&&[^xyz]]"), "(?:(?=[^aeiou])(?=[^xyz])[a-z])");
  EXPECT_EQ(Translate(R"([^\s\p{L}]|\S)"), R"([^\p{White_Space}\p{L}]|\P{White_Space})");
  EXPECT_EQ(Translate(R"([]a]|[\]&]|[[:alpha:]])"), R"([\]a]|[\]&]|[[:alpha:]])");
  EXPECT_EQ(Translate(R"(\h+)", RegexDialect::kOniguruma), "[0-9A-Fa-f]+");
  EXPECT_EQ(Translate(R"(\x{4E00}\p{N}{1,3}+)"), R"(\x{4E00}\p{N}{1,3}+)");
  EXPECT_THAT(TranslateRegex("[a&&]", RegexDialect::kRust),
              warp::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                      ::testing::HasSubstr("empty operand")));
}

TEST(RegexTest, IntersectionMatchesLikeRust) {
  EXPECT_EQ(FindAll(R"([\p{L}&&[^\p{Han}]]+)", "abc中文déf"), (Pieces{"abc",
                                                                      "d\xC3\xA9"
                                                                      "f"}));
  EXPECT_EQ(FindAll("[a-z&&[^aeiou]]+", "programming"), (Pieces{"pr", "gr", "mm", "ng"}));
}

TEST(RegexTest, KimiPatternSplitsHanFromOtherLetters) {
  EXPECT_EQ(FindAll(kKimiPattern, "中文English日本語テキスト123456 DON'T"),
            (Pieces{"中文", "English", "日本語", "テキスト", "123", "456", " DON'T"}));
}

TEST(RegexTest, WhiteSpaceIsUnicodeWhiteSpaceOnly) {
  // U+0085 is White_Space; U+180E (Mongolian vowel separator) is not,
  // though PCRE2's own \s takes it.
  EXPECT_EQ(FindAll(R"(\s+)",
                    "a\xC2\x85"
                    "b\xE1\xA0\x8E"
                    "c"),
            (Pieces{"\xC2\x85"}));
}

TEST(RegexTest, EmptyMatchesAdvanceByOneCharacter) {
  EXPECT_EQ(FindAll("x*", "a\xC3\xA9x"), (Pieces{"", "", "x", ""}));
}

TEST(RegexTest, DollarAnchorsPerDialect) {
  EXPECT_EQ(FindAll(R"(\s+$)", "a \nb ", RegexDialect::kRust), (Pieces{" "}));
  EXPECT_EQ(FindAll(R"(\s+$)", "a \nb ", RegexDialect::kOniguruma), (Pieces{" ", " "}));
}

TEST(Utf8Test, LossyReplacesMaximalSubparts) {
  EXPECT_EQ(Utf8Lossy("a\xE4\xB8"
                      "b"),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(Utf8Lossy("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(Utf8Lossy("\xF0\x9F\x98"), "\xEF\xBF\xBD");
  EXPECT_EQ(Utf8Lossy("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // surrogate
  EXPECT_EQ(Utf8Lossy("ok \xE4\xB8\xAD"), "ok \xE4\xB8\xAD");
}

Pieces PreTokenize(const Json& config, std::string text, bool at_text_start = true) {
  absl::StatusOr<std::unique_ptr<PreTokenizer>> pre_tokenizer = ParsePreTokenizer(config, "p");
  EXPECT_TRUE(pre_tokenizer.ok()) << pre_tokenizer.status();
  if (!pre_tokenizer.ok()) return {};
  absl::StatusOr<Pieces> pieces =
      (*pre_tokenizer)->PreTokenize({std::move(text)}, {.at_text_start = at_text_start});
  EXPECT_TRUE(pieces.ok()) << pieces.status();
  return pieces.value_or(Pieces{});
}

Json SplitOn(const std::string& delimiter, const std::string& behavior, bool invert = false) {
  return {{"type", "Split"},
          {"pattern", {{"String", delimiter}}},
          {"behavior", behavior},
          {"invert", invert}};
}

TEST(PreTokenizerTest, SplitBehaviorsFollowHuggingFace) {
  EXPECT_EQ(PreTokenize(SplitOn("-", "Removed"), "a-b--c"), (Pieces{"a", "b", "c"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "Isolated"), "a-b--c"),
            (Pieces{"a", "-", "b", "-", "-", "c"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "MergedWithPrevious"), "a-b--c"),
            (Pieces{"a-", "b-", "-", "c"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "MergedWithNext"), "a-b--c"), (Pieces{"a", "-b", "-", "-c"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "Contiguous"), "a-b--c"), (Pieces{"a", "-", "b", "--", "c"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "Removed", true), "a-b--c"), (Pieces{"-", "-", "-"}));
  EXPECT_EQ(PreTokenize(SplitOn("-", "Isolated", true), "a-b--c"),
            (Pieces{"a", "-", "b", "-", "-", "c"}));
}

TEST(PreTokenizerTest, SimpleSplitters) {
  EXPECT_EQ(PreTokenize({{"type", "WhitespaceSplit"}},
                        "  a b\t\nc\xC2\xA0"
                        "d "),
            (Pieces{"a", "b", "c", "d"}));
  EXPECT_EQ(PreTokenize({{"type", "Whitespace"}}, "Hello, world! It's_ok"),
            (Pieces{"Hello", ",", "world", "!", "It", "'", "s_ok"}));
  EXPECT_EQ(PreTokenize({{"type", "Punctuation"}}, "a,b!!c"),
            (Pieces{"a", ",", "b", "!", "!", "c"}));
  EXPECT_EQ(PreTokenize({{"type", "Digits"}, {"individual_digits", false}}, "abc123def4"),
            (Pieces{"abc", "123", "def", "4"}));
  EXPECT_EQ(PreTokenize({{"type", "Digits"}, {"individual_digits", true}}, "ab12\xD9\xA3"),
            (Pieces{"ab", "1", "2", "\xD9\xA3"}));  // U+0663 ARABIC-INDIC THREE is numeric
}

TEST(PreTokenizerTest, MetaspaceSchemesAndSplit) {
  const Json always = {{"type", "Metaspace"},
                       {"replacement", "\u2581"},
                       {"prepend_scheme", "always"},
                       {"split", true}};
  EXPECT_EQ(PreTokenize(always, "hello world"), (Pieces{"\u2581hello", "\u2581world"}));
  // Text already starting with the replacement gets none prepended.
  EXPECT_EQ(PreTokenize(always, "  a"), (Pieces{"\u2581", "\u2581a"}));
  Json first = always;
  first["prepend_scheme"] = "first";
  first["split"] = false;
  EXPECT_EQ(PreTokenize(first, "hi you"), (Pieces{"\u2581hi\u2581you"}));
  EXPECT_EQ(PreTokenize(first, "hi", /*at_text_start=*/false), (Pieces{"hi"}));
  Json never = always;
  never["prepend_scheme"] = "never";
  EXPECT_EQ(PreTokenize(never, "hi you"), (Pieces{"hi", "\u2581you"}));
}

TEST(PreTokenizerTest, ByteLevelMapsBytesAndSplitsLikeGpt2) {
  const Json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"use_regex", true}};
  EXPECT_EQ(PreTokenize(byte_level, "hello world's\n"),
            (Pieces{"\xC4\xA0hello", "\xC4\xA0world", "'s", "\xC4\x8A"}));
  EXPECT_EQ(PreTokenize({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}},
                        "\xC3\xA9 x"),
            (Pieces{"\xC3\x83\xC2\xA9\xC4\xA0x"}));
}

std::string Normalize(const Json& config, std::string_view text) {
  absl::StatusOr<std::unique_ptr<Normalizer>> normalizer = ParseNormalizer(config, "n");
  EXPECT_TRUE(normalizer.ok()) << normalizer.status();
  if (!normalizer.ok()) return "";
  absl::StatusOr<std::string> normalized = (*normalizer)->Normalize(text);
  EXPECT_TRUE(normalized.ok()) << normalized.status();
  return normalized.value_or("");
}

TEST(NormalizerTest, UnicodeForms) {
  EXPECT_EQ(Normalize({{"type", "NFC"}}, "cafe\xCC\x81"), "caf\xC3\xA9");
  EXPECT_EQ(Normalize({{"type", "NFD"}}, "caf\xC3\xA9"), "cafe\xCC\x81");
  EXPECT_EQ(Normalize({{"type", "NFKC"}}, "\xEF\xAC\x81 \xE2\x91\xA0"), "fi 1");
  EXPECT_EQ(Normalize({{"type", "NFKD"}}, "\xEF\xBD\x86\xC3\xA9"), "fe\xCC\x81");
}

TEST(NormalizerTest, LowercaseIsFullMapping) {
  EXPECT_EQ(Normalize({{"type", "Lowercase"}}, "\xC4\xB0STANBUL"), "i\xCC\x87stanbul");
  // Word-final capital sigma lowercases to final sigma.
  EXPECT_EQ(Normalize({{"type", "Lowercase"}}, "\xCE\x9F\xCE\x94\xCE\x9F\xCE\xA3 \xCE\xA3"),
            "\xCE\xBF\xCE\xB4\xCE\xBF\xCF\x82 \xCF\x83");
}

TEST(NormalizerTest, StripReplacePrependSequence) {
  EXPECT_EQ(Normalize({{"type", "Strip"}, {"strip_left", true}, {"strip_right", false}},
                      " \xE3\x80\x80"
                      "a b "),
            "a b ");
  EXPECT_EQ(Normalize({{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}},
                      "a b  c"),
            "a\u2581b\u2581\u2581c");
  EXPECT_EQ(Normalize({{"type", "Replace"}, {"pattern", {{"Regex", "\\s+"}}}, {"content", "_"}},
                      "a \t b\n"),
            "a_b_");
  EXPECT_EQ(Normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, "x"), "\u2581x");
  EXPECT_EQ(Normalize({{"type", "Prepend"}, {"prepend", "\u2581"}}, ""), "");
  EXPECT_EQ(Normalize({{"type", "Sequence"},
                       {"normalizers", {{{"type", "Lowercase"}}, {{"type", "NFD"}}}}},
                      "\xC3\x89"),
            "e\xCC\x81");
}

// tiktoken's merge loop, the plain O(n^2) way, on one piece.
std::vector<int32_t> NaiveTiktoken(const Tokenizer& tokenizer, const std::string& piece) {
  std::vector<std::string> parts;
  for (const char byte : piece) parts.emplace_back(1, byte);
  while (parts.size() > 1) {
    int32_t best_rank = INT32_MAX;
    size_t best = 0;
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      const std::optional<int32_t> rank = tokenizer.TokenToId(parts[k] + parts[k + 1]);
      if (rank && *rank < best_rank) {
        best_rank = *rank;
        best = k;
      }
    }
    if (best_rank == INT32_MAX) break;
    parts[best] += parts[best + 1];
    parts.erase(parts.begin() + static_cast<ptrdiff_t>(best) + 1);
  }
  std::vector<int32_t> ids;
  for (const std::string& part : parts) ids.push_back(*tokenizer.TokenToId(part));
  return ids;
}

TEST(TiktokenTest, HeapMergeEqualsNaiveMerge) {
  absl::StatusOr<const testing::Family*> family = testing::GetFamily("cl100k_base");
  WARP_ASSERT_OK(family);
  absl::StatusOr<const Tokenizer*> tokenizer =
      testing::CachedTokenizer((*family)->tokenizer_path, (*family)->options);
  WARP_ASSERT_OK(tokenizer);
  std::mt19937 random(42);
  for (int round = 0; round < 300; ++round) {
    // One letters-only word: one regex piece, so Encode merges exactly it.
    std::string word;
    const size_t length = 2 + random() % (round < 250 ? 24 : 400);
    for (size_t k = 0; k < length; ++k) word += "aabcdeilnorst"[random() % 13];
    absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->Encode(word, false);
    WARP_ASSERT_OK(ids);
    EXPECT_EQ(*ids, NaiveTiktoken(**tokenizer, word)) << word;
  }
}

}  // namespace
}  // namespace warp::text
