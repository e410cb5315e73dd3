// Every family x every shared test string: the ids (with and without
// add_special_tokens) and the decoded text equal the reference
// implementations' (@huggingface/tokenizers, tiktoken), run through node.

#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/text/families.h"
#include "tests/text/text_test_util.h"

namespace warp::text::testing {
namespace {

std::string Quoted(const std::string& text) {
  return "\"" + absl::CHexEscape(text.size() > 80 ? text.substr(0, 80) + "..." : text) + "\"";
}

bool Skipped(const Family& family, const std::string& text) {
  if (family.reference_skips_blank && text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return true;
  }
  for (const std::string& skip : family.reference_skips) {
    if (text.find(skip) != std::string::npos) return true;
  }
  return false;
}

class ReferenceTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceTest, IdsAndDecodedTextMatchTheReference) {
  absl::StatusOr<const Family*> family = GetFamily(GetParam());
  WARP_ASSERT_OK(family);
  absl::StatusOr<const Tokenizer*> tokenizer =
      CachedTokenizer((*family)->tokenizer_path, (*family)->options);
  WARP_ASSERT_OK(tokenizer);
  const std::vector<std::string>& strings = TestStrings();
  ASSERT_GE(strings.size(), 40u);
  std::vector<std::string> args = (*family)->reference_args;
  args.push_back(WriteTempJson(strings, "strings.json").string());
  absl::StatusOr<nlohmann::json> reference = RunReference(args);
  WARP_ASSERT_OK(reference);
  ASSERT_EQ((*reference)["plain"].size(), strings.size());

  size_t compared = 0;
  for (size_t k = 0; k < strings.size(); ++k) {
    const std::string& text = strings[k];
    if (Skipped(**family, text)) continue;
    ++compared;
    SCOPED_TRACE("string " + std::to_string(k) + ": " + Quoted(text));
    absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->Encode(text, false);
    WARP_ASSERT_OK(ids);
    EXPECT_EQ(*ids, (*reference)["plain"][k].get<std::vector<int32_t>>());
    if ((*family)->has_post_processor) {
      absl::StatusOr<std::vector<int32_t>> with_special = (*tokenizer)->Encode(text, true);
      WARP_ASSERT_OK(with_special);
      EXPECT_EQ(*with_special, (*reference)["special"][k].get<std::vector<int32_t>>());
    }
    absl::StatusOr<std::string> decoded = (*tokenizer)->Decode(*ids, false);
    WARP_ASSERT_OK(decoded);
    EXPECT_EQ(*decoded, (*reference)["decoded"][k].get<std::string>());
  }
  EXPECT_GE(compared, strings.size() - 6);
}

INSTANTIATE_TEST_SUITE_P(Real, ReferenceTest, ::testing::ValuesIn(RealFamilyNames()),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(Variants, ReferenceTest, ::testing::ValuesIn(VariantFamilyNames()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace warp::text::testing
