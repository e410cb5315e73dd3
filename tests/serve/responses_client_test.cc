// computed serve's OpenAI Responses API through the official `openai` npm
// client's responses.create and responses.stream (tests/serve/openai_client.mjs):
// a response, streamed or not, is the chat completion of the same
// conversation (the demo model, greedy); previous_response_id continues a
// held conversation and an unknown one is the client's BadRequestError; a
// function call round trip reaches the chat template of a tool-calling
// family as the same conversation in chat messages does.

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/fixtures.h"

namespace {

using Json = nlohmann::json;
// Requests whose tools must reach the template in the order written.
using OJson = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::warp::testing::ServedModelTest;

Json Client(const warp::testing::TestServer& server, const std::string& call,
            const nlohmann::ordered_json& request, int expect_status = 0) {
  return warp::testing::RunClientScript("openai_client.mjs", "openai", server, call, request,
                                        expect_status, "");
}

class ResponsesClientTest : public ServedModelTest<&warp::testing::ConvertDemoModel, 256> {};

TEST_F(ResponsesClientTest, AResponseStreamedOrNotIsTheChatCompletionsReply) {
  const Json chat = Client(*server_, "chat",
                           {{"model", "kjv.warp"},
                            {"messages", {{{"role", "user"}, {"content", "In the beginning"}}}},
                            {"max_tokens", 24},
                            {"temperature", 0}});
  const Json& completion = chat["completion"];
  const std::string expected = completion["choices"][0]["message"]["content"];
  ASSERT_FALSE(expected.empty()) << chat;

  const Json out = Client(*server_, "responses",
                          {{"model", "kjv.warp"},
                           {"input", "In the beginning"},
                           {"max_output_tokens", 24},
                           {"temperature", 0}});
  const Json& response = out["response"];
  EXPECT_EQ(response["object"], "response");
  EXPECT_EQ(response["status"], "completed");
  EXPECT_THAT(response["id"].get<std::string>(), ::testing::StartsWith("resp_"));
  EXPECT_EQ(response["output_text"], expected);  // the SDK's own join of output_text parts
  ASSERT_EQ(response["output"].size(), 1u) << response;
  EXPECT_EQ(response["output"][0]["type"], "message");
  EXPECT_EQ(response["output"][0]["status"], "completed");
  EXPECT_EQ(response["output"][0]["content"][0]["type"], "output_text");
  EXPECT_EQ(response["usage"]["input_tokens"], completion["usage"]["prompt_tokens"]);
  EXPECT_EQ(response["usage"]["output_tokens"], completion["usage"]["completion_tokens"]);
  EXPECT_EQ(response["usage"]["total_tokens"], completion["usage"]["total_tokens"]);

  const Json& streamed = out["streamed"];
  const auto& events = streamed["events"];
  ASSERT_GE(events.size(), 8u) << streamed;
  EXPECT_EQ(events[0], "response.created");
  EXPECT_EQ(events[1], "response.in_progress");
  EXPECT_EQ(events[2], "response.output_item.added");
  EXPECT_EQ(events[3], "response.content_part.added");
  EXPECT_EQ(events.back(), "response.completed");
  for (size_t i = 0; i < streamed["sequence"].size(); ++i) EXPECT_EQ(streamed["sequence"][i], i);
  EXPECT_EQ(streamed["text"], expected);
  EXPECT_EQ(streamed["status"], "completed");
  EXPECT_EQ(streamed["usage"]["output_tokens"], response["usage"]["output_tokens"]);
  EXPECT_EQ(streamed["final_text"], expected);
  EXPECT_EQ(streamed["final"]["status"], "completed");
}

TEST_F(ResponsesClientTest, PreviousResponseIdContinuesTheConversation) {
  const Json first = Client(*server_, "responses",
                            {{"model", "kjv.warp"},
                             {"input", "In the beginning"},
                             {"max_output_tokens", 6},
                             {"temperature", 0}})["response"];
  ASSERT_TRUE(first.is_object());
  const Json second = Client(*server_, "responses",
                             {{"model", "kjv.warp"},
                              {"previous_response_id", first["id"]},
                              {"input", "And then"},
                              {"max_output_tokens", 6},
                              {"temperature", 0}})["response"];
  EXPECT_EQ(second["previous_response_id"], first["id"]);
  // The same conversation as chat messages: the first turn, its reply, the second turn.
  const Json chat = Client(*server_, "chat",
                           {{"model", "kjv.warp"},
                            {"messages",
                             {{{"role", "user"}, {"content", "In the beginning"}},
                              {{"role", "assistant"}, {"content", first["output_text"]}},
                              {{"role", "user"}, {"content", "And then"}}}},
                            {"max_tokens", 6},
                            {"temperature", 0}})["completion"];
  EXPECT_EQ(second["usage"]["input_tokens"], chat["usage"]["prompt_tokens"]);
  EXPECT_EQ(second["output_text"], chat["choices"][0]["message"]["content"]);

  const Json unknown = Client(*server_, "error",
                              {{"endpoint", "responses"},
                               {"model", "kjv.warp"},
                               {"previous_response_id", "resp_0000000000000000"},
                               {"input", "And then"}},
                              400);
  EXPECT_EQ(unknown["class"], "BadRequestError");
  EXPECT_EQ(unknown["param"], "previous_response_id");
  EXPECT_THAT(unknown["message"].get<std::string>(),
              HasSubstr("no response \"resp_0000000000000000\" is held"));
}

TEST_F(ResponsesClientTest, MaxOutputTokensLeavesItIncomplete) {
  const Json out = Client(*server_, "responses",
                          {{"model", "kjv.warp"},
                           {"input", "In the beginning"},
                           {"max_output_tokens", 3},
                           {"temperature", 0}});
  EXPECT_EQ(out["response"]["status"], "incomplete");
  EXPECT_EQ(out["response"]["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(out["response"]["usage"]["output_tokens"], 3);
  EXPECT_EQ(out["streamed"]["events"].back(), "response.incomplete");
  EXPECT_EQ(out["streamed"]["status"], "incomplete");
}

TEST_F(ResponsesClientTest, BadRequestsAreTheClientsBadRequestError) {
  const auto refused = [&](Json request, const std::string& param, const std::string& what) {
    request["endpoint"] = "responses";
    request["model"] = "kjv.warp";
    const Json error = Client(*server_, "error", request, 400);
    EXPECT_EQ(error["class"], "BadRequestError") << what;
    EXPECT_EQ(error["param"], param) << what;
    EXPECT_THAT(error["message"].get<std::string>(), HasSubstr(what));
  };
  refused(Json::object(), "input", "input is required");
  refused(
      {{"input",
        {{{"role", "user"},
          {"content", {{{"type", "input_image"}, {"image_url", "https://example.com/a.png"}}}}}}}},
      "input[0].content[0]", "parts of type \"input_image\" are not supported");
  refused(
      {{"input", {{{"type", "function_call_output"}, {"call_id", "call_9"}, {"output", "21"}}}}},
      "input[0].call_id", "no function_call with call_id \"call_9\" comes before it");
  refused({{"input", "hi"}, {"tools", {{{"type", "web_search"}}}}}, "tools[0].type",
          "tools of type \"web_search\" are not supported");
  refused({{"input", "hi"}, {"text", {{"format", {{"type", "xml"}}}}}}, "text.format",
          "text.format must be {\"type\": \"text\"}, {\"type\": \"json_object\"} or");
  refused({{"input", "hi"},
           {"text",
            {{"format",
              {{"type", "json_schema"},
               {"name", "n"},
               {"schema", {{"type", "string"}, {"pattern", "^a"}}}}}}}},
          "text.format", "schema at $: \"pattern\" is not supported");
  refused({{"input", "hi"}, {"tool_choice", "required"}}, "tool_choice",
          "tool_choice forces a tool call, but the request has no tools");
  refused({{"input", "hi"}, {"tool_choice", {{"type", "function"}}}}, "tool_choice",
          "tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"name\": STRING}");
  refused({{"input", "hi"}, {"background", true}}, "background",
          "background: true is not supported");
  refused({{"input", {{{"type", "web_search_call"}, {"id", "ws_1"}}}}}, "input[0].type",
          "items of type \"web_search_call\" are not supported");
  refused({{"input", "hi"}, {"max_output_tokens", 0}}, "max_output_tokens",
          "max_output_tokens must be an integer of at least 1");
}

// The tiny Qwen3: a function call round trip in Responses items reaches its
// template as the same conversation in chat messages does.
class ResponsesClientToolsTest : public ServedModelTest<&warp::testing::ConvertTinyQwen3, 1024> {};

TEST_F(ResponsesClientToolsTest, AFunctionCallRoundTripIsTheSameConversationAsChats) {
  const OJson schema = {
      {"type", "object"}, {"properties", {{"city", {{"type", "string"}}}}}, {"required", {"city"}}};
  const std::string ask = "What is the weather in Paris?";
  const Json out = Client(*server_, "responses",
                          OJson{{"model", "qwen3.warp"},
                                {"input",
                                 {{{"role", "user"}, {"content", ask}},
                                  {{"type", "function_call"},
                                   {"call_id", "call_1"},
                                   {"name", "get_weather"},
                                   {"arguments", R"({"city": "Paris"})"}},
                                  {{"type", "function_call_output"},
                                   {"call_id", "call_1"},
                                   {"output", R"({"celsius": 21})"}}}},
                                {"tools",
                                 {{{"type", "function"},
                                   {"name", "get_weather"},
                                   {"description", "The weather in a city."},
                                   {"parameters", schema}}}},
                                {"max_output_tokens", 8},
                                {"temperature", 0}});
  const Json chat = Client(
      *server_, "chat",
      OJson{
          {"model", "qwen3.warp"},
          {"messages",
           {{{"role", "user"}, {"content", ask}},
            {{"role", "assistant"},
             {"content", ""},
             {"tool_calls",
              {{{"id", "call_1"},
                {"type", "function"},
                {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}}}}},
            {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", R"({"celsius": 21})"}}}},
          {"tools",
           {{{"type", "function"},
             {"function",
              {{"name", "get_weather"},
               {"description", "The weather in a city."},
               {"parameters", schema}}}}}},
          {"max_tokens", 8},
          {"temperature", 0}});
  const Json& response = out["response"];
  const Json& completion = chat["completion"];
  ASSERT_TRUE(response.is_object() && completion.is_object()) << out << chat;
  EXPECT_EQ(response["usage"]["input_tokens"], completion["usage"]["prompt_tokens"]);
  EXPECT_EQ(response["output_text"], completion["choices"][0]["message"]["content"]);
  EXPECT_EQ(out["streamed"]["text"], completion["choices"][0]["message"]["content"]);
}

}  // namespace
