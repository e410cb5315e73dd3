#include "computed/constrain/grammar.h"

#include <string_view>

#include "gtest/gtest.h"

namespace warp::computed::constrain {
namespace {

GrammarState After(const Grammar& grammar, std::string_view text) {
  GrammarState state = GrammarState::Start(grammar);
  for (const char c : text) state = state.AfterByte(grammar, static_cast<uint8_t>(c));
  return state;
}

TEST(GrammarTest, MatchesAlternativesAndRepetition) {
  GrammarBuilder b;
  // root ::= "a" digits ("!" | ε); digits ::= [0-9] digits | ε
  ByteSet digit;
  for (char c = '0'; c <= '9'; ++c) digit.set(c);
  const int32_t digits = b.AddRule("digits");
  b.AddAlternative(digits, {b.Bytes(digit), GrammarBuilder::Ref(digits)});
  b.AddAlternative(digits, {});
  const int32_t bang = b.AddRule("bang", {b.Literal("!"), {}});
  const int32_t root =
      b.AddRule("root", {{b.Byte('a'), GrammarBuilder::Ref(digits), GrammarBuilder::Ref(bang)}});
  absl::StatusOr<Grammar> grammar = std::move(b).Build(root);
  ASSERT_TRUE(grammar.ok()) << grammar.status();

  EXPECT_FALSE(After(*grammar, "").can_end());
  EXPECT_TRUE(After(*grammar, "a").can_end());
  EXPECT_FALSE(After(*grammar, "a").finished());
  EXPECT_TRUE(After(*grammar, "a123").can_end());
  EXPECT_TRUE(After(*grammar, "a12!").finished());
  EXPECT_TRUE(After(*grammar, "b").dead());
  EXPECT_TRUE(After(*grammar, "a!1").dead());
  // Repetition by right recursion comes back to the same state.
  EXPECT_EQ(After(*grammar, "a1").Key(), After(*grammar, "a1234567").Key());
  EXPECT_NE(After(*grammar, "a").Key(), After(*grammar, "a!").Key());
}

TEST(GrammarTest, MarkersAreNotBytes) {
  GrammarBuilder b;
  const int32_t root = b.AddRule("root", {{GrammarBuilder::Marker(7), b.Byte('x')}});
  absl::StatusOr<Grammar> grammar = std::move(b).Build(root);
  ASSERT_TRUE(grammar.ok());
  const GrammarState start = GrammarState::Start(*grammar);
  EXPECT_TRUE(start.AcceptsMarker(*grammar, 7));
  EXPECT_FALSE(start.AcceptsMarker(*grammar, 8));
  EXPECT_FALSE(start.Accepts(*grammar, 7));
  EXPECT_TRUE(start.AfterMarker(*grammar, 7).AfterByte(*grammar, 'x').finished());
}

TEST(GrammarTest, RefusesLeftRecursionAndEmptyRules) {
  {
    GrammarBuilder b;
    const int32_t list = b.AddRule("list");
    const int32_t maybe = b.AddRule("maybe", {b.Literal("-"), {}});
    // list ::= maybe list "x" | "x": list may start with itself.
    b.AddAlternative(list, {GrammarBuilder::Ref(maybe), GrammarBuilder::Ref(list), b.Byte('x')});
    b.AddAlternative(list, b.Literal("x"));
    absl::StatusOr<Grammar> grammar = std::move(b).Build(list);
    ASSERT_FALSE(grammar.ok());
    EXPECT_EQ(grammar.status().message(), "grammar rule \"list\" is left-recursive");
  }
  {
    GrammarBuilder b;
    const int32_t empty = b.AddRule("nothing");
    const int32_t root = b.AddRule("root", {{GrammarBuilder::Ref(empty)}});
    absl::StatusOr<Grammar> grammar = std::move(b).Build(root);
    ASSERT_FALSE(grammar.ok());
    EXPECT_EQ(grammar.status().message(), "grammar rule \"nothing\" has no alternative");
  }
}

}  // namespace
}  // namespace warp::computed::constrain
