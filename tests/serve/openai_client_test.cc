// computed serve through the official `openai` npm client (tests/npm,
// driven by tests/serve/openai_client.mjs): what the client builds, parses
// and raises must agree with `computed run` on the demo model, and a tool
// round trip must reach the chat template of a tool-calling family (a tiny
// Qwen3 with the real Qwen3 tokenizer and template).

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::RunBinary;
using ::warp::testing::TestServer;

// openai_client.mjs CALL REQUEST against `server`.
Json Client(const TestServer& server, const std::string& call, const Json& request = {},
            int expect_status = 0, const std::string& api_key = "") {
  return warp::testing::RunClientScript("openai_client.mjs", "openai", server, call, request,
                                        expect_status, api_key);
}

// `computed run ARGS`, greedy: its text and the prompt's token count.
struct RunResult {
  std::string text;
  int prompt_tokens = -1;
};
RunResult RunComputed(const std::string& model, const std::string& args) {
  auto result = RunBinary("computed", "--log-level warn run " + model + " " + args);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  const size_t stats = result.output.rfind("\n[prefill ");
  RunResult out;
  out.text = result.output.substr(0, stats);
  if (stats != std::string::npos) {
    const size_t at = stats + 10;
    EXPECT_TRUE(absl::SimpleAtoi(result.output.substr(at, result.output.find(' ', at) - at),
                                 &out.prompt_tokens))
        << result.output;
  }
  return out;
}

std::string WriteJson(const fs::path& path, const Json& json) {
  std::ofstream(path) << json.dump();
  return path.string();
}

const Json kHello = {{{"role", "user"}, {"content", "In the beginning"}}};

using ::warp::testing::ServedModelTest;

class OpenAiClientTest : public ServedModelTest<&warp::testing::ConvertDemoModel, 256> {};

TEST_F(OpenAiClientTest, ChatStreamedOrNotIsWhatComputedRunSays) {
  const std::string expected = RunComputed(*model_, "'In the beginning' -n 24").text;
  ASSERT_FALSE(expected.empty());
  const Json out =
      Client(*server_, "chat",
             {{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 24}, {"temperature", 0}});
  const Json& completion = out["completion"];
  EXPECT_EQ(completion["object"], "chat.completion");
  EXPECT_EQ(completion["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(completion["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(completion["choices"][0]["finish_reason"], "stop");

  // The client's own SSE parsing: the deltas joined are the same reply, the
  // role comes once, and include_usage brings the same count.
  const Json& streamed = out["streamed"];
  EXPECT_EQ(streamed["content"], expected);
  EXPECT_EQ(streamed["finish_reason"], "stop");
  EXPECT_THAT(streamed["roles"], ElementsAre("assistant"));
  EXPECT_EQ(streamed["usage"]["completion_tokens"], completion["usage"]["completion_tokens"]);
  EXPECT_EQ(streamed["usage"]["prompt_tokens"], completion["usage"]["prompt_tokens"]);
  EXPECT_GT(streamed["warp"]["decode_tokens_per_second"].get<double>(), 0);
}

TEST_F(OpenAiClientTest, CompletionsAreWhatComputedRunRawSays) {
  const std::string expected = RunComputed(*model_, "--raw 'And God said' -n 16").text;
  const Json out = Client(
      *server_, "completions",
      {{"model", "kjv.warp"}, {"prompt", "And God said"}, {"max_tokens", 16}, {"temperature", 0}});
  EXPECT_EQ(out["completion"]["object"], "text_completion");
  EXPECT_EQ(out["completion"]["choices"][0]["text"], expected);
  EXPECT_EQ(out["completion"]["usage"]["completion_tokens"], 16);
  EXPECT_EQ(out["streamed"]["text"], expected);
  EXPECT_EQ(out["streamed"]["finish_reason"], "length");
}

TEST_F(OpenAiClientTest, ModelsListTheServedContainer) {
  EXPECT_THAT(Client(*server_, "models")["ids"], ElementsAre("kjv.warp"));
}

TEST_F(OpenAiClientTest, BadRequestsAreTheClientsBadRequestError) {
  const Json role =
      Client(*server_, "error",
             {{"model", "kjv.warp"}, {"messages", {{{"role", "wizard"}, {"content", "hi"}}}}}, 400);
  EXPECT_EQ(role["class"], "BadRequestError");
  EXPECT_EQ(role["type"], "invalid_request_error");
  EXPECT_EQ(role["param"], "messages[0].role");
  EXPECT_THAT(role["message"].get<std::string>(), HasSubstr("unknown role \"wizard\""));

  const Json zero = Client(*server_, "error",
                           {{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 0}}, 400);
  EXPECT_EQ(zero["class"], "BadRequestError");
  EXPECT_EQ(zero["param"], "max_tokens");

  const Json empty = Client(
      *server_, "error", {{"endpoint", "completions"}, {"model", "kjv.warp"}, {"prompt", ""}}, 400);
  EXPECT_EQ(empty["param"], "prompt");

  std::string bible;
  for (int i = 0; i < 50; ++i) bible += "and the earth was without form ";
  const Json over =
      Client(*server_, "error",
             {{"model", "kjv.warp"}, {"messages", {{{"role", "user"}, {"content", bible}}}}}, 400);
  EXPECT_EQ(over["code"], "context_length_exceeded");
}

TEST_F(OpenAiClientTest, AWrongApiKeyIsTheClientsAuthenticationError) {
  TestServer guarded({*model_, "--context", "64", "--api-key", "sesame-open"});
  ASSERT_NE(guarded.port(), 0) << guarded.output();
  const Json request = {{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 2}};
  const Json wrong = Client(guarded, "error", request, 401, "nope");
  EXPECT_EQ(wrong["class"], "AuthenticationError");
  EXPECT_EQ(wrong["code"], "invalid_api_key");
  const Json right = Client(guarded, "chat", request, 0, "sesame-open");
  EXPECT_EQ(right["completion"]["usage"]["completion_tokens"], 2);
  EXPECT_THAT(Client(guarded, "models", {}, 0, "sesame-open")["ids"], ElementsAre("kjv.warp"));
}

// The tiny Qwen3: random weights never call a tool, so what is checked is
// that the tools and the tool turns reach Qwen3's template (the prompt is
// what `computed template` renders, the reply what `computed run` says).
class OpenAiClientToolsTest : public ServedModelTest<&warp::testing::ConvertTinyQwen3, 1024> {};

const Json kWeatherTool = {{"type", "function"},
                           {"function",
                            {{"name", "get_weather"},
                             {"description", "The weather in a city."},
                             {"parameters",
                              {{"type", "object"},
                               {"properties", {{"city", {{"type", "string"}}}}},
                               {"required", {"city"}}}}}}};
const Json kAsk = {{"role", "user"}, {"content", "What is the weather in Paris?"}};

TEST_F(OpenAiClientToolsTest, ToolsReachTheTemplate) {
  const Json tools = Json::array({kWeatherTool});
  const Json plain = Client(
      *server_, "chat",
      {{"model", "qwen3.warp"}, {"messages", {kAsk}}, {"max_tokens", 8}, {"temperature", 0}});
  const Json with_tools = Client(*server_, "chat",
                                 {{"model", "qwen3.warp"},
                                  {"messages", {kAsk}},
                                  {"tools", tools},
                                  {"max_tokens", 8},
                                  {"temperature", 0}});
  const Json& usage = with_tools["completion"]["usage"];
  // Qwen3's template lists the tools in a system turn: dozens of tokens more.
  EXPECT_GT(usage["prompt_tokens"].get<int>(),
            plain["completion"]["usage"]["prompt_tokens"].get<int>() + 50);

  const RunResult run =
      RunComputed(*model_, "--tools " + WriteJson(dir_->path() / "tools.json", tools) +
                               " 'What is the weather in Paris?' -n 8 --temperature 0");
  EXPECT_EQ(usage["prompt_tokens"], run.prompt_tokens);
  // The reply parser of a thinking family trims the whitespace around content.
  const std::string reply(absl::StripAsciiWhitespace(run.text));
  const Json& message = with_tools["completion"]["choices"][0]["message"];
  EXPECT_EQ(message["content"], reply);
  EXPECT_FALSE(message.contains("tool_calls") && !message["tool_calls"].empty()) << message;
  EXPECT_EQ(with_tools["completion"]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(with_tools["streamed"]["content"], reply);
  EXPECT_EQ(with_tools["streamed"]["finish_reason"], "length");
}

// A tool round trip: the question, the assistant's tool call (arguments a
// JSON string, as the API returns them), the tool's result. Served as the
// same conversation rendered by `computed template` and continued raw by
// `computed run`: the same prompt, the same reply.
void ExpectToolRoundTrip(const TestServer& server, const std::string& model, const fs::path& dir,
                         const Json& assistant_content) {
  const Json messages = {
      kAsk,
      {{"role", "assistant"},
       {"content", assistant_content},
       {"tool_calls",
        {{{"id", "call_1"},
          {"type", "function"},
          {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}}}}},
      {{"role", "tool"}, {"tool_call_id", "call_1"}, {"content", R"({"celsius": 21})"}}};
  const Json tools = Json::array({kWeatherTool});
  const Json out = Client(server, "chat",
                          {{"model", "qwen3.warp"},
                           {"messages", messages},
                           {"tools", tools},
                           {"max_tokens", 8},
                           {"temperature", 0}});
  const Json& completion = out["completion"];
  ASSERT_TRUE(completion.is_object()) << out;
  EXPECT_EQ(completion["choices"][0]["finish_reason"], "length");

  // The reference renders null content as the server does when the template
  // refuses it: as "".
  Json reference = messages;
  if (reference[1]["content"].is_null()) reference[1]["content"] = "";
  auto rendered = RunBinary(
      "computed", "--log-level warn template --add-generation-prompt --tokenizer " + model +
                      " --messages " + WriteJson(dir / "messages.json", reference) + " --tools " +
                      WriteJson(dir / "tools.json", tools));
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  EXPECT_THAT(rendered.output, HasSubstr("<tool_response>\n{\"celsius\": 21}\n</tool_response>"));
  const fs::path prompt = dir / "prompt.txt";
  std::ofstream(prompt) << rendered.output;
  // $(cat) drops the trailing newlines; they go back inside the quotes.
  std::string newlines;
  for (size_t i = rendered.output.size(); i > 0 && rendered.output[i - 1] == '\n'; --i) {
    newlines += '\n';
  }
  const RunResult run = RunComputed(
      model, "--raw \"$(cat " + prompt.string() + ")" + newlines + "\" -n 8 --temperature 0");
  EXPECT_EQ(completion["usage"]["prompt_tokens"], run.prompt_tokens);
  const std::string reply(absl::StripAsciiWhitespace(run.text));  // as above
  EXPECT_EQ(completion["choices"][0]["message"]["content"], reply);
  EXPECT_EQ(out["streamed"]["content"], reply);
}

TEST_F(OpenAiClientToolsTest, AToolResultRoundTrips) {
  ExpectToolRoundTrip(*server_, *model_, dir_->path(), "");
}

// Clients send the assistant's tool-call turn back as the API returned it,
// content null; Qwen3's template tests `'</think>' in message.content`, which
// fails on null: the server renders such a turn again with "".
TEST_F(OpenAiClientToolsTest, AToolResultRoundTripsWithNullContent) {
  ExpectToolRoundTrip(*server_, *model_, dir_->path(), nullptr);
}

}  // namespace
