// computed serve's Anthropic Messages API through the official
// `@anthropic-ai/sdk` npm client (tests/npm, driven by
// tests/serve/anthropic_client.mjs): a message, streamed or not, must be what
// the chat completion of the same conversation is (the demo model, greedy);
// the stream must be Anthropic's event sequence; errors must be the SDK's
// classes; a tool round trip (tool_use, tool_result) must reach the chat
// template of a tool-calling family as the same conversation in OpenAI's shape.

#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/fixtures.h"

namespace {

using Json = nlohmann::json;
// Requests whose tools must reach the template in the order written.
using OJson = nlohmann::ordered_json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::ServedModelTest;
using ::warp::testing::TestServer;

Json Anthropic(const TestServer& server, const std::string& call,
               const nlohmann::ordered_json& request, int expect_status = 0,
               const std::string& api_key = "") {
  return warp::testing::RunClientScript("anthropic_client.mjs", "@anthropic-ai/sdk", server, call,
                                        request, expect_status, api_key);
}

Json OpenAi(const TestServer& server, const nlohmann::ordered_json& request) {
  return warp::testing::RunClientScript("openai_client.mjs", "openai", server, "chat", request, 0,
                                        "");
}

const Json kHello = {{{"role", "user"}, {"content", "In the beginning"}}};

class AnthropicClientTest : public ServedModelTest<&warp::testing::ConvertDemoModel, 256> {};

TEST_F(AnthropicClientTest, AMessageStreamedOrNotIsTheChatCompletionsReply) {
  const Json chat =
      OpenAi(*server_,
             {{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 24}, {"temperature", 0}});
  const Json& completion = chat["completion"];
  const std::string expected = completion["choices"][0]["message"]["content"];
  ASSERT_FALSE(expected.empty()) << chat;

  const Json out = Anthropic(
      *server_, "messages",
      {{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 24}, {"temperature", 0}});
  const Json& message = out["message"];
  EXPECT_EQ(message["type"], "message");
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_EQ(message["model"], "kjv.warp");
  EXPECT_THAT(message["id"].get<std::string>(), ::testing::StartsWith("msg_"));
  ASSERT_EQ(message["content"].size(), 1u) << message;
  EXPECT_EQ(message["content"][0]["type"], "text");
  EXPECT_EQ(message["content"][0]["text"], expected);
  EXPECT_EQ(message["stop_reason"], "end_turn");  // the chat completion's "stop"
  EXPECT_TRUE(message["stop_sequence"].is_null());
  EXPECT_EQ(message["usage"]["input_tokens"].get<int>() +
                message["usage"]["cache_read_input_tokens"].get<int>(),
            completion["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(message["usage"]["output_tokens"], completion["usage"]["completion_tokens"]);

  // The SDK's own SSE parsing and accumulation: Anthropic's event sequence,
  // one text block, the same text and counts.
  const Json& streamed = out["streamed"];
  const auto& events = streamed["events"];
  ASSERT_GE(events.size(), 5u) << streamed;
  EXPECT_EQ(events.front(), "message_start");
  EXPECT_EQ(events[events.size() - 2], "message_delta");
  EXPECT_EQ(events.back(), "message_stop");
  EXPECT_THAT(streamed["blocks"], ElementsAre("text"));
  int opened = 0, closed = 0, deltas = 0;
  for (const Json& event : events) {
    opened += event == "content_block_start";
    closed += event == "content_block_stop";
    deltas += event == "content_block_delta";
  }
  EXPECT_EQ(opened, 1);
  EXPECT_EQ(closed, 1);
  EXPECT_GT(deltas, 1);
  EXPECT_EQ(streamed["text"], expected);
  EXPECT_EQ(streamed["stop_reason"], "end_turn");
  EXPECT_EQ(streamed["output_tokens"], message["usage"]["output_tokens"]);
  EXPECT_EQ(streamed["final"]["content"][0]["text"], expected);
  EXPECT_EQ(streamed["final"]["stop_reason"], "end_turn");
}

TEST_F(AnthropicClientTest, CountTokensIsThePromptOfTheReply) {
  const Json request = {{"model", "kjv.warp"}, {"messages", kHello}};
  const Json count = Anthropic(*server_, "count", request);
  Json create = request;
  create["max_tokens"] = 2;
  const Json message = Anthropic(*server_, "messages", create)["message"];
  EXPECT_EQ(count["input_tokens"].get<int>(),
            message["usage"]["input_tokens"].get<int>() +
                message["usage"]["cache_read_input_tokens"].get<int>());
  Json with_system = request;
  with_system["system"] = "You are a scribe.";
  EXPECT_GT(Anthropic(*server_, "count", with_system)["input_tokens"].get<int>(),
            count["input_tokens"].get<int>());
}

TEST_F(AnthropicClientTest, AStopSequenceOrMaxTokensIsTheStopReason) {
  const Json greedy = {{"model", "kjv.warp"}, {"messages", kHello}, {"temperature", 0}};
  Json request = greedy;
  request["max_tokens"] = 24;
  const std::string text =
      Anthropic(*server_, "messages", request)["message"]["content"][0]["text"];
  const size_t space = text.find(' ', 3);
  ASSERT_NE(space, std::string::npos) << text;
  const std::string stop = text.substr(space, 3);
  request["stop_sequences"] = {stop};
  const Json stopped = Anthropic(*server_, "messages", request);
  EXPECT_EQ(stopped["message"]["stop_reason"], "stop_sequence");
  EXPECT_EQ(stopped["message"]["stop_sequence"], stop);
  EXPECT_EQ(stopped["message"]["content"][0]["text"], text.substr(0, text.find(stop)));
  EXPECT_EQ(stopped["streamed"]["stop_reason"], "stop_sequence");
  EXPECT_EQ(stopped["streamed"]["stop_sequence"], stop);

  request = greedy;
  request["max_tokens"] = 3;
  const Json cut = Anthropic(*server_, "messages", request);
  EXPECT_EQ(cut["message"]["stop_reason"], "max_tokens");
  EXPECT_EQ(cut["message"]["usage"]["output_tokens"], 3);
  EXPECT_EQ(cut["streamed"]["stop_reason"], "max_tokens");
}

TEST_F(AnthropicClientTest, BadRequestsAreTheClientsBadRequestError) {
  const auto refused = [&](Json request, const std::string& what) {
    request["model"] = "kjv.warp";
    const Json error = Anthropic(*server_, "error", request, 400);
    EXPECT_EQ(error["class"], "BadRequestError") << what;
    EXPECT_EQ(error["body_type"], "error") << what;
    EXPECT_EQ(error["type"], "invalid_request_error") << what;
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(what));
  };
  refused({{"messages", kHello}}, "max_tokens is required");
  refused({{"messages", kHello}, {"max_tokens", 4}, {"temperature", 1.5}},
          "temperature must be a number in [0, 1]");
  refused({{"messages", {{{"role", "system"}, {"content", "hi"}}}}, {"max_tokens", 4}},
          "messages[0].role must be \"user\" or \"assistant\"");
  refused(
      {{"messages",
        {{{"role", "user"},
          {"content",
           {{{"type", "text"}, {"text", "what is this?"}},
            {{"type", "image"},
             {"source", {{"type", "base64"}, {"media_type", "image/png"}, {"data", "AAAA"}}}}}}}}},
       {"max_tokens", 4}},
      "messages[0].content[1]: image blocks are not supported");
  refused(
      {{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}}}}}}}, {"max_tokens", 4}},
      "messages[0].content[0] must be {\"type\": \"text\", \"text\": STRING}");
  refused(
      {{"messages",
        {{{"role", "user"},
          {"content",
           {{{"type", "tool_result"}, {"tool_use_id", "toolu_9"}, {"content", "21"}}}}}}},
       {"max_tokens", 4}},
      "messages[0].content[0].tool_use_id: no tool_use block with id \"toolu_9\" comes before it");
  refused({{"messages", kHello}, {"max_tokens", 4}, {"tool_choice", {{"type", "any"}}}},
          "tool_choice forces a tool call, but the request has no tools");
  const Json search = {{"name", "search"},
                       {"input_schema",
                        {{"type", "object"},
                         {"properties", {{"q", {{"type", "string"}, {"pattern", "^a"}}}}}}}};
  refused({{"messages", kHello},
           {"max_tokens", 4},
           {"tools", {search}},
           {"tool_choice", {{"type", "tool"}, {"name", "find"}}}},
          "tool_choice names \"find\", which is not in tools");
  // The demo model's template has no tool-call syntax to force.
  refused({{"messages", kHello},
           {"max_tokens", 4},
           {"tools", {search}},
           {"tool_choice", {{"type", "any"}}}},
          "the model's chat template writes no tool calls WARP can read");
  refused({{"messages", kHello},
           {"max_tokens", 4},
           {"tools", {search}},
           {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", "yes"}}}},
          "tool_choice.disable_parallel_tool_use must be a boolean");
  refused({{"messages", kHello}, {"max_tokens", 4}, {"tool_choice", {{"type", "tool"}}}},
          "tool_choice must be {\"type\": \"auto\" | \"none\" | \"any\"} or {\"type\": \"tool\", \"name\": STRING}");
  refused({{"messages", kHello},
           {"max_tokens", 4},
           {"thinking", {{"type", "enabled"}, {"budget_tokens", 0}}}},
          "thinking.budget_tokens must be an integer of at least 1");
  refused({{"messages", kHello},
           {"max_tokens", 4},
           {"tools", {{{"type", "web_search_20250305"}, {"name", "web_search"}}}}},
          "server tools (type \"web_search_20250305\") are not supported");
  refused({{"messages", kHello}, {"max_tokens", 4}, {"frequency_penalty", 1}},
          "frequency_penalty: not a field WARP serves");
  std::string long_prompt;
  for (int i = 0; i < 50; ++i) long_prompt += "and the earth was without form ";
  refused({{"messages", {{{"role", "user"}, {"content", long_prompt}}}}, {"max_tokens", 4}},
          "the context holds 256");
}

TEST_F(AnthropicClientTest, AWrongApiKeyIsTheClientsAuthenticationError) {
  TestServer guarded({*model_, "--context", "64", "--api-key", "sesame-open"});
  ASSERT_NE(guarded.port(), 0) << guarded.output();
  const Json request = {{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 2}};
  const Json wrong = Anthropic(guarded, "error", request, 401, "nope-nope");
  EXPECT_EQ(wrong["class"], "AuthenticationError");
  EXPECT_EQ(wrong["type"], "authentication_error");
  const Json right = Anthropic(guarded, "messages", request, 0, "sesame-open");
  EXPECT_EQ(right["message"]["usage"]["output_tokens"], 2);
}

// The tiny Qwen3 (a tool-calling template; random weights never call a tool):
// the tools and a tool round trip in Anthropic's blocks reach the template as
// the same conversation in OpenAI's shape does; thinking is a thinking block
// (and the chat completion's reasoning_content).
class AnthropicClientToolsTest : public ServedModelTest<&warp::testing::ConvertTinyQwen3, 1024> {};

const OJson kAsk = {{"role", "user"}, {"content", "What is the weather in Paris?"}};

TEST_F(AnthropicClientToolsTest, AToolRoundTripIsTheSameConversationAsOpenAis) {
  const OJson schema = {
      {"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};
  const OJson anthropic_tools = {{{"name", "get_weather"},
                                  {"description", "The weather in a city."},
                                  {"input_schema", schema}}};
  const OJson openai_tools = {{{"type", "function"},
                               {"function",
                                {{"name", "get_weather"},
                                 {"description", "The weather in a city."},
                                 {"parameters", schema}}}}};
  const OJson anthropic_messages = {kAsk,
                                    {{"role", "assistant"},
                                     {"content",
                                      {{{"type", "text"}, {"text", "Let me look."}},
                                       {{"type", "tool_use"},
                                        {"id", "toolu_1"},
                                        {"name", "get_weather"},
                                        {"input", {{"city", "Paris"}}}}}}},
                                    {{"role", "user"},
                                     {"content",
                                      {{{"type", "tool_result"},
                                        {"tool_use_id", "toolu_1"},
                                        {"content", R"({"celsius": 21})"}}}}}};
  const OJson openai_messages = {
      kAsk,
      {{"role", "assistant"},
       {"content", "Let me look."},
       {"tool_calls",
        {{{"id", "toolu_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", R"({"city":"Paris"})"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "toolu_1"}, {"content", R"({"celsius": 21})"}}};

  const Json plain =
      Anthropic(*server_, "count", OJson{{"model", "qwen3.warp"}, {"messages", {kAsk}}});
  const Json with_tools =
      Anthropic(*server_, "count",
                OJson{{"model", "qwen3.warp"}, {"messages", {kAsk}}, {"tools", anthropic_tools}});
  EXPECT_GT(with_tools["input_tokens"].get<int>(), plain["input_tokens"].get<int>() + 50);

  const Json out = Anthropic(*server_, "messages",
                             OJson{{"model", "qwen3.warp"},
                                   {"messages", anthropic_messages},
                                   {"tools", anthropic_tools},
                                   {"max_tokens", 8},
                                   {"temperature", 0}});
  const Json reference = OpenAi(*server_, OJson{{"model", "qwen3.warp"},
                                                {"messages", openai_messages},
                                                {"tools", openai_tools},
                                                {"max_tokens", 8},
                                                {"temperature", 0}});
  const Json& message = out["message"];
  const Json& completion = reference["completion"];
  ASSERT_TRUE(message.is_object() && completion.is_object()) << out << reference;
  EXPECT_EQ(message["usage"]["input_tokens"].get<int>() +
                message["usage"]["cache_read_input_tokens"].get<int>(),
            completion["usage"]["prompt_tokens"].get<int>());
  EXPECT_EQ(message["content"][0]["text"], completion["choices"][0]["message"]["content"]);
  EXPECT_EQ(message["stop_reason"], "max_tokens");
  EXPECT_EQ(out["streamed"]["text"], completion["choices"][0]["message"]["content"]);
}

// A template of Qwen3's dialect whose generation prompt opens the reasoning
// when thinking is on (as DeepSeek V3.1's and Kimi K2 Thinking's do) and
// closes it empty when off (as Qwen3's does): the random model's words are
// then all reasoning, or all text.
constexpr char kThinkingTemplate[] =
    "{%- for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}"
    "<|im_end|>\n{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n"
    "{%- else %}<think>\n{%- endif %}{%- endif %}";

TEST_F(AnthropicClientToolsTest, ThinkingIsAThinkingBlockAndItsDeltas) {
  const std::string path = (dir_->path() / "thinking.jinja").string();
  std::ofstream(path) << kThinkingTemplate;
  TestServer thinking({*model_, "--context", "256", "--chat-template", path});
  ASSERT_NE(thinking.port(), 0) << thinking.output();
  Json request = {{"model", "qwen3.warp"},
                  {"messages", {kAsk}},
                  {"max_tokens", 8},
                  {"temperature", 0},
                  {"thinking", {{"type", "enabled"}, {"budget_tokens", 1024}}}};
  const Json on = Anthropic(thinking, "messages", request);
  const Json& message = on["message"];
  ASSERT_EQ(message["content"].size(), 1u) << message;
  EXPECT_EQ(message["content"][0]["type"], "thinking");
  const std::string reasoning = message["content"][0]["thinking"];
  EXPECT_FALSE(reasoning.empty());
  EXPECT_EQ(message["stop_reason"], "max_tokens");
  EXPECT_THAT(on["streamed"]["blocks"], ElementsAre("thinking"));
  EXPECT_EQ(on["streamed"]["thinking"], reasoning);
  EXPECT_EQ(on["streamed"]["final"]["content"][0]["thinking"], reasoning);

  // The chat completion's reasoning_content is the same reasoning, streamed or not.
  const Json chat = OpenAi(thinking, {{"model", "qwen3.warp"},
                                      {"messages", {kAsk}},
                                      {"max_tokens", 8},
                                      {"temperature", 0},
                                      {"chat_template_kwargs", {{"enable_thinking", true}}}});
  EXPECT_EQ(chat["completion"]["choices"][0]["message"]["reasoning_content"], reasoning) << chat;
  EXPECT_EQ(chat["streamed"]["reasoning_content"], reasoning);
  EXPECT_EQ(chat["streamed"]["content"], "");

  request["thinking"] = {{"type", "disabled"}};
  const Json off = Anthropic(thinking, "messages", request);
  ASSERT_EQ(off["message"]["content"].size(), 1u) << off;
  EXPECT_EQ(off["message"]["content"][0]["type"], "text");
  EXPECT_THAT(off["streamed"]["blocks"], ElementsAre("text"));
}

}  // namespace
