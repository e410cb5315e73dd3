#include "computed/serve/reply_grammar.h"

#include <random>
#include <string>
#include <vector>

#include "computed/serve/reply_markers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::ordered_json;

// Every dialect's markers as special tokens (ids from 1000), any other text
// as bytes: what the grammar's markers need of a tokenizer.
class MarkerTokenizer : public text::Tokenizer {
 public:
  MarkerTokenizer() {
    for (std::string_view marker :
         {kThinkOpen,       kThinkClose,       kQwenCallOpen,
          kQwenCallClose,   kDsSectionOpen,    kDsSectionClose,
          kDsCallOpen,      kDsCallClose,      kDsSep,
          kKimiSectionOpen, kKimiSectionClose, kKimiCallOpen,
          kKimiCallClose,   kKimiArgs,         kHarmonyStart,
          kHarmonyChannel,  kHarmonyMessage,   kHarmonyEnd,
          kHarmonyCall,     kHarmonyReturn,    std::string_view("<|constrain|>")}) {
      markers_.emplace_back(marker);
    }
  }
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view, bool) const override {
    return absl::UnimplementedError("");
  }
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t>, bool) const override {
    return absl::UnimplementedError("");
  }
  int32_t vocab_size() const override { return 1000 + static_cast<int32_t>(markers_.size()); }
  std::optional<int32_t> TokenToId(std::string_view token) const override {
    for (size_t k = 0; k < markers_.size(); ++k) {
      if (markers_[k] == token) return 1000 + static_cast<int32_t>(k);
    }
    return std::nullopt;
  }
  std::optional<std::string> IdToToken(int32_t id) const override {
    if (id >= 1000 && id < vocab_size()) return markers_[id - 1000];
    return std::nullopt;
  }
  bool IsSpecial(int32_t id) const override { return id >= 1000; }
  std::optional<std::string> PieceBytes(int32_t id) const override {
    if (id >= 1000) return std::nullopt;
    return std::string(1, static_cast<char>(id & 0xff));
  }

 private:
  std::vector<std::string> markers_;
};

// A random text the grammar accepts: markers taken when allowed (half the
// time), printable bytes otherwise, ending where it may (a quarter of the time).
std::string RandomReply(const constrain::Grammar& grammar, const MarkerTokenizer& tokenizer,
                        std::mt19937& rng) {
  constrain::GrammarState state = constrain::GrammarState::Start(grammar);
  std::string text;
  while (!state.finished() && text.size() < 4000) {
    if (state.can_end() && rng() % 4 == 0) break;
    std::vector<int32_t> markers;
    for (int32_t id = 1000; id < tokenizer.vocab_size(); ++id) {
      if (state.AcceptsMarker(grammar, id)) markers.push_back(id);
    }
    std::vector<uint8_t> bytes;
    for (int c = 0x20; c < 0x7f; ++c) {
      if (state.Accepts(grammar, static_cast<uint8_t>(c))) bytes.push_back(c);
    }
    if (state.Accepts(grammar, '\n')) bytes.push_back('\n');
    if (!markers.empty() && (bytes.empty() || rng() % 2 == 0)) {
      const int32_t id = markers[rng() % markers.size()];
      text += *tokenizer.IdToToken(id);
      state = state.AfterMarker(grammar, id);
    } else {
      EXPECT_FALSE(bytes.empty()) << "a dead end after " << text;
      if (bytes.empty()) break;
      const uint8_t c = bytes[rng() % bytes.size()];
      text.push_back(static_cast<char>(c));
      state = state.AfterByte(grammar, c);
    }
  }
  return text;
}

CompletionRequest Forced(bool parallel) {
  CompletionRequest request;
  request.tools = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"enum": ["Paris", "Oslo"]}, "days": {"type": "integer"}},
      "required": ["city"]}}},
    {"type": "function", "function": {"name": "ping"}}])");
  request.tool_choice = "required";
  request.parallel_tool_calls = parallel;
  return request;
}

struct DialectCase {
  const char* name;
  ReplyDialect dialect;
};

const DialectCase kDialects[] = {
    {"qwen3", {.format = ReplyFormat::kQwen3}},
    {"qwen3 reasoning", {.format = ReplyFormat::kQwen3, .starts_in_reasoning = true}},
    {"deepseek v3", {.format = ReplyFormat::kDeepSeekV3, .fenced_arguments = true}},
    {"deepseek v3.1", {.format = ReplyFormat::kDeepSeekV3}},
    {"deepseek v3.1 reasoning", {.format = ReplyFormat::kDeepSeekV3, .starts_in_reasoning = true}},
    {"kimi k2", {.format = ReplyFormat::kKimiK2}},
    {"gpt-oss", {.format = ReplyFormat::kGptOss}},
    {"gpt-oss reasoning", {.format = ReplyFormat::kGptOss, .starts_in_reasoning = true}},
};

// What a forced reply writes, the dialect's parser reads back as calls of
// the tools with valid arguments, and nothing else.
TEST(ReplyGrammarTest, ForcedCallsParseAsToolCallsInEveryDialect) {
  const MarkerTokenizer tokenizer;
  std::mt19937 rng(11);
  for (const DialectCase& c : kDialects) {
    for (const bool parallel : {false, true}) {
      SCOPED_TRACE(std::string(c.name) + (parallel ? " parallel" : ""));
      auto grammar = ReplyGrammar(Forced(parallel), c.dialect, tokenizer);
      ASSERT_TRUE(std::holds_alternative<std::shared_ptr<const constrain::Grammar>>(grammar));
      const auto& g = *std::get<std::shared_ptr<const constrain::Grammar>>(grammar);
      size_t most_calls = 0, reasoned = 0;
      for (int k = 0; k < 40; ++k) {
        const std::string text = RandomReply(g, tokenizer, rng);
        SCOPED_TRACE(text);
        const Reply reply = ParseReply(c.dialect.format, text,
                                       {.starts_in_reasoning = c.dialect.starts_in_reasoning});
        EXPECT_EQ(reply.malformed_tool_calls, 0);
        EXPECT_EQ(reply.content, "");
        ASSERT_GE(reply.tool_calls.size(), 1u);
        if (!parallel) {
          ASSERT_EQ(reply.tool_calls.size(), 1u);
        }
        most_calls = std::max(most_calls, reply.tool_calls.size());
        reasoned += !reply.reasoning_content.empty();
        for (const ToolCall& call : reply.tool_calls) {
          const Json args = Json::parse(call.arguments);
          ASSERT_TRUE(args.is_object());
          if (call.name == "get_weather") {
            EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo");
          } else {
            EXPECT_EQ(call.name, "ping");
          }
        }
      }
      EXPECT_GT(reasoned, 0u) << "no reply reasoned before its call";
      const bool one_call_dialect = c.dialect.format == ReplyFormat::kGptOss;
      if (parallel && !one_call_dialect) {
        EXPECT_GT(most_calls, 1u);
      }
    }
  }
}

TEST(ReplyGrammarTest, JsonAnswersAreTheContentInEveryDialect) {
  const MarkerTokenizer tokenizer;
  std::mt19937 rng(5);
  CompletionRequest request;
  request.output_format = Json::parse(
      R"({"type": "json_schema", "schema": {"type": "array", "items": {"type": "boolean"}}})");
  for (const DialectCase& c : kDialects) {
    SCOPED_TRACE(c.name);
    auto grammar = ReplyGrammar(request, c.dialect, tokenizer);
    const auto& g = *std::get<std::shared_ptr<const constrain::Grammar>>(grammar);
    for (int k = 0; k < 20; ++k) {
      const std::string text = RandomReply(g, tokenizer, rng);
      SCOPED_TRACE(text);
      const Reply reply = ParseReply(c.dialect.format, text,
                                     {.starts_in_reasoning = c.dialect.starts_in_reasoning});
      const Json value = Json::parse(reply.content);
      ASSERT_TRUE(value.is_array());
      for (const Json& item : value) EXPECT_TRUE(item.is_boolean());
      EXPECT_TRUE(reply.tool_calls.empty());
    }
  }
}

TEST(ReplyGrammarTest, NoConstraintIsNoGrammar) {
  const MarkerTokenizer tokenizer;
  CompletionRequest request = Forced(true);
  request.tool_choice = "auto";
  auto grammar = ReplyGrammar(request, {.format = ReplyFormat::kQwen3}, tokenizer);
  EXPECT_EQ(std::get<std::shared_ptr<const constrain::Grammar>>(grammar), nullptr);
}

TEST(ReplyGrammarTest, RefusalsNameWhatCannotBeConstrained) {
  const MarkerTokenizer tokenizer;
  auto refusal = [&](const CompletionRequest& request, ReplyFormat format) {
    auto grammar = ReplyGrammar(request, {.format = format}, tokenizer);
    EXPECT_TRUE(std::holds_alternative<ApiError>(grammar));
    return std::holds_alternative<ApiError>(grammar) ? std::get<ApiError>(grammar) : ApiError{};
  };
  ApiError plain = refusal(Forced(false), ReplyFormat::kPlain);
  EXPECT_EQ(plain.param, "tool_choice");
  EXPECT_THAT(plain.message, ::testing::HasSubstr("writes no tool calls WARP can read"));

  CompletionRequest named = Forced(false);
  named.tool_choice = Json::parse(R"({"type": "function", "function": {"name": "nope"}})");
  EXPECT_EQ(refusal(named, ReplyFormat::kQwen3).message,
            "tool_choice names \"nope\", which is not in tools");

  CompletionRequest bad_schema = Forced(false);
  bad_schema.tools[0]["function"]["parameters"]["properties"]["city"] =
      Json::parse(R"({"type": "string", "format": "city", "pattern": "^[A-Z]"})");
  ApiError schema = refusal(bad_schema, ReplyFormat::kQwen3);
  EXPECT_EQ(schema.param, "tools");
  EXPECT_EQ(schema.message,
            "tool \"get_weather\": schema at $.properties.city: \"pattern\" is not supported");

  CompletionRequest nameless = Forced(false);
  nameless.tool_choice = Json::parse(R"({"type": "function", "function": {"name": 3}})");
  EXPECT_EQ(refusal(nameless, ReplyFormat::kQwen3).message,
            "tool_choice.function.name must be a string");

  CompletionRequest both = Forced(false);
  both.output_format = Json::parse(R"({"type": "json_object"})");
  EXPECT_EQ(refusal(both, ReplyFormat::kQwen3).message,
            "response_format cannot be combined with a tool_choice that forces a call");
}

}  // namespace
}  // namespace warp::computed::serve
