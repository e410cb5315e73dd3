// Constrained replies through the real clients (`openai`, `@anthropic-ai/sdk`)
// against `computed serve` of the tiny Qwen3, whose random weights never call
// a tool or write JSON on their own: tool_choice required / a named function
// / Anthropic any / tool, response_format and text.format json_schema. Each
// reply goes through the server's reply parser, plain and streamed, and a
// second turn carries the tool's result.

#include <fstream>
#include <string>

#include "absl/strings/ascii.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/run_command.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;
using ::testing::AnyOf;
using ::testing::Eq;
using ::testing::StartsWith;
using ::warp::testing::RunBinary;
using ::warp::testing::ServedModelTest;
using ::warp::testing::TestServer;

Json OpenAi(const TestServer& server, const std::string& call, const OJson& request) {
  return warp::testing::RunClientScript("openai_client.mjs", "openai", server, call, request, 0,
                                        "");
}

Json Anthropic(const TestServer& server, const OJson& request) {
  return warp::testing::RunClientScript("anthropic_client.mjs", "@anthropic-ai/sdk", server,
                                        "messages", request, 0, "");
}

const OJson kWeatherSchema = OJson::parse(R"({
  "type": "object",
  "properties": {
    "city": {"enum": ["Paris", "Oslo"]},
    "days": {"type": "integer", "minimum": 0},
    "hourly": {"type": "boolean"}
  },
  "required": ["city", "days"],
  "additionalProperties": false
})");
const OJson kTimeSchema = OJson::parse(R"({
  "type": "object",
  "properties": {"zone": {"enum": ["UTC", "CET"]}},
  "required": ["zone"]
})");

OJson ChatTools() {
  return {{{"type", "function"},
           {"function",
            {{"name", "get_weather"},
             {"description", "The weather in a city."},
             {"parameters", kWeatherSchema}}}},
          {{"type", "function"},
           {"function",
            {{"name", "get_time"}, {"description", "The time."}, {"parameters", kTimeSchema}}}}};
}

const OJson kAsk = {{"role", "user"}, {"content", "What is the weather in Paris?"}};

// `arguments` (a JSON text or object) is valid under the schema of `name`.
void ExpectValidArguments(const std::string& name, const Json& arguments) {
  SCOPED_TRACE(arguments.dump());
  const Json args = arguments.is_string() ? Json::parse(arguments.get<std::string>()) : arguments;
  ASSERT_TRUE(args.is_object());
  if (name == "get_weather") {
    EXPECT_THAT(args["city"], AnyOf(Eq("Paris"), Eq("Oslo")));
    EXPECT_TRUE(args["days"].is_number_unsigned());
    if (args.contains("hourly")) {
      EXPECT_TRUE(args["hourly"].is_boolean());
    }
    for (const auto& [key, unused] : args.items()) {
      EXPECT_TRUE(key == "city" || key == "days" || key == "hourly") << key;
    }
  } else {
    ASSERT_EQ(name, "get_time");
    EXPECT_THAT(args["zone"], AnyOf(Eq("UTC"), Eq("CET")));
  }
}

class ConstrainedReplyTest : public ServedModelTest<&warp::testing::ConvertTinyQwen3, 1024> {};

TEST_F(ConstrainedReplyTest, ToolChoiceRequiredIsARealToolCallAndASecondTurnCarriesItsResult) {
  const OJson request = {
      {"model", "qwen3.warp"},     {"messages", {kAsk}},           {"tools", ChatTools()},
      {"tool_choice", "required"}, {"parallel_tool_calls", false}, {"max_tokens", 96},
      {"temperature", 0}};
  const Json out = OpenAi(*server_, "chat", request);
  const Json& choice = out["completion"]["choices"][0];
  ASSERT_EQ(choice["finish_reason"], "tool_calls") << out;
  const Json& message = choice["message"];
  EXPECT_TRUE(message["content"].is_null()) << message;
  ASSERT_EQ(message["tool_calls"].size(), 1u) << message;
  const Json& call = message["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_THAT(call["id"].get<std::string>(), StartsWith("call_"));
  ExpectValidArguments(call["function"]["name"], call["function"]["arguments"]);
  // Streamed: the deltas merge (by index, as the client does) into the same call.
  const Json& streamed = out["streamed"];
  EXPECT_EQ(streamed["finish_reason"], "tool_calls");
  ASSERT_EQ(streamed["tool_calls"].size(), 1u) << streamed;
  EXPECT_EQ(streamed["tool_calls"][0]["function"], call["function"]);
  EXPECT_EQ(streamed["content"], "");

  // The second turn: the call as the API returned it, and the tool's result.
  OJson messages = {
      kAsk,
      OJson::parse(message.dump()),
      {{"role", "tool"}, {"tool_call_id", call["id"]}, {"content", R"({"celsius": 21})"}}};
  const Json second = OpenAi(*server_, "chat",
                             OJson{{"model", "qwen3.warp"},
                                   {"messages", messages},
                                   {"tools", ChatTools()},
                                   {"max_tokens", 4},
                                   {"temperature", 0}});
  EXPECT_EQ(second["completion"]["choices"][0]["finish_reason"], "length") << second;
  EXPECT_GT(second["completion"]["usage"]["prompt_tokens"].get<int>(),
            out["completion"]["usage"]["prompt_tokens"].get<int>() + 20);
}

TEST_F(ConstrainedReplyTest, ANamedFunctionIsTheOneCalled) {
  const Json out =
      OpenAi(*server_, "chat",
             OJson{{"model", "qwen3.warp"},
                   {"messages", {kAsk}},
                   {"tools", ChatTools()},
                   {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
                   {"parallel_tool_calls", false},
                   {"max_tokens", 96},
                   {"temperature", 0}});
  const Json& message = out["completion"]["choices"][0]["message"];
  ASSERT_EQ(message["tool_calls"].size(), 1u) << out;
  EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_time");
  ExpectValidArguments("get_time", message["tool_calls"][0]["function"]["arguments"]);
  EXPECT_EQ(out["streamed"]["tool_calls"][0]["function"], message["tool_calls"][0]["function"]);
}

const OJson kVerdictSchema = OJson::parse(R"({
  "type": "object",
  "properties": {
    "answer": {"enum": ["yes", "no"]},
    "confidence": {"type": "integer"},
    "tags": {"type": "array", "items": {"enum": ["sun", "rain"]}, "maxItems": 2}
  },
  "required": ["answer", "confidence", "tags"]
})");

void ExpectVerdict(const std::string& text) {
  SCOPED_TRACE(text);
  const Json verdict = Json::parse(text);
  EXPECT_THAT(verdict["answer"], AnyOf(Eq("yes"), Eq("no")));
  EXPECT_TRUE(verdict["confidence"].is_number_integer());
  ASSERT_TRUE(verdict["tags"].is_array());
  EXPECT_LE(verdict["tags"].size(), 2u);
  for (const Json& tag : verdict["tags"]) EXPECT_THAT(tag, AnyOf(Eq("sun"), Eq("rain")));
}

TEST_F(ConstrainedReplyTest, AJsonSchemaReplyParsesAndValidates) {
  const Json out = OpenAi(
      *server_, "chat",
      OJson{
          {"model", "qwen3.warp"},
          {"messages", {kAsk}},
          {"response_format",
           {{"type", "json_schema"},
            {"json_schema", {{"name", "verdict"}, {"strict", true}, {"schema", kVerdictSchema}}}}},
          {"max_tokens", 96},
          {"temperature", 0}});
  const Json& choice = out["completion"]["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "stop") << out;
  ExpectVerdict(choice["message"]["content"]);
  EXPECT_EQ(out["streamed"]["content"], choice["message"]["content"]);
}

// Masking only refuses: where the grammar allows the token the model would
// pick anyway, it is picked. A JSON string's first token is forced to open
// with the quote; every word after it is allowed inside the string, so the
// reply is that first token and then what `computed run` continues from the
// prompt and it.
TEST_F(ConstrainedReplyTest, MaskingKeepsEveryTokenTheGrammarAllows) {
  constexpr int kTokens = 12;
  auto reply = [&](int tokens) {
    const Json out =
        OpenAi(*server_, "chat",
               OJson{{"model", "qwen3.warp"},
                     {"messages", {kAsk}},
                     {"response_format",
                      {{"type", "json_schema"},
                       {"json_schema", {{"name", "s"}, {"schema", {{"type", "string"}}}}}}},
                     {"max_tokens", tokens},
                     {"temperature", 0}});
    EXPECT_EQ(out["completion"]["choices"][0]["finish_reason"], "length") << out;
    return out["completion"]["choices"][0]["message"]["content"].get<std::string>();
  };
  const std::string first = reply(1);
  ASSERT_THAT(first, StartsWith("\""));
  const std::string content = reply(kTokens);
  ASSERT_THAT(content, StartsWith(first));

  const fs::path messages = dir_->path() / "ask.json";
  std::ofstream(messages) << Json::array({kAsk}).dump();
  auto rendered = RunBinary("computed",
                            "--log-level warn template --add-generation-prompt "
                            "--tokenizer " +
                                *model_ + " --messages " + messages.string());
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  const fs::path prompt = dir_->path() / "ask-first.txt";
  std::ofstream(prompt) << rendered.output << first;
  auto run = RunBinary("computed", "--log-level warn run " + *model_ + " --raw \"$(cat " +
                                       prompt.string() + ")\" -n " + std::to_string(kTokens - 1) +
                                       " --temperature 0");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::string continued = run.output.substr(0, run.output.rfind("\n[prefill "));
  EXPECT_EQ(absl::StripAsciiWhitespace(content.substr(first.size())),
            absl::StripAsciiWhitespace(continued));
}

TEST_F(ConstrainedReplyTest, ResponsesForceAFunctionCallAndAJsonText) {
  OJson tools = OJson::array();
  for (const OJson& tool : ChatTools()) {
    tools.push_back({{"type", "function"},
                     {"name", tool["function"]["name"]},
                     {"parameters", tool["function"]["parameters"]}});
  }
  const Json called = OpenAi(*server_, "responses",
                             OJson{{"model", "qwen3.warp"},
                                   {"input", "What is the weather in Paris?"},
                                   {"tools", tools},
                                   {"tool_choice", "required"},
                                   {"parallel_tool_calls", false},
                                   {"max_output_tokens", 96},
                                   {"temperature", 0}});
  const Json& output = called["response"]["output"];
  ASSERT_EQ(output.size(), 1u) << called;
  ASSERT_EQ(output[0]["type"], "function_call");
  ExpectValidArguments(output[0]["name"], output[0]["arguments"]);
  EXPECT_EQ(called["response"]["status"], "completed");
  ASSERT_EQ(called["streamed"]["calls"].size(), 1u) << called["streamed"];
  EXPECT_EQ(called["streamed"]["calls"][0], output[0]["arguments"]);

  const Json json =
      OpenAi(*server_, "responses",
             OJson{{"model", "qwen3.warp"},
                   {"input", "Will it rain?"},
                   {"text",
                    {{"format",
                      {{"type", "json_schema"}, {"name", "verdict"}, {"schema", kVerdictSchema}}}}},
                   {"max_output_tokens", 96},
                   {"temperature", 0}});
  ExpectVerdict(json["response"]["output_text"]);
  EXPECT_EQ(json["response"]["text"]["format"]["type"], "json_schema");
  EXPECT_EQ(json["streamed"]["text"], json["response"]["output_text"]);
}

TEST_F(ConstrainedReplyTest, AnthropicAnyIsAToolUseAndTheResultGoesBack) {
  const OJson tools = {{{"name", "get_weather"}, {"input_schema", kWeatherSchema}},
                       {{"name", "get_time"}, {"input_schema", kTimeSchema}}};
  const Json out = Anthropic(
      *server_, OJson{{"model", "qwen3.warp"},
                      {"messages", {kAsk}},
                      {"tools", tools},
                      {"tool_choice", {{"type", "any"}, {"disable_parallel_tool_use", true}}},
                      {"max_tokens", 96},
                      {"temperature", 0}});
  const Json& message = out["message"];
  EXPECT_EQ(message["stop_reason"], "tool_use") << out;
  ASSERT_EQ(message["content"].size(), 1u) << message;
  const Json& use = message["content"][0];
  ASSERT_EQ(use["type"], "tool_use");
  ExpectValidArguments(use["name"], use["input"]);
  const Json& streamed = out["streamed"];
  EXPECT_EQ(streamed["stop_reason"], "tool_use");
  ASSERT_EQ(streamed["tool_uses"].size(), 1u) << streamed;
  EXPECT_EQ(streamed["tool_uses"][0]["name"], use["name"]);
  EXPECT_EQ(streamed["tool_uses"][0]["input"], use["input"]);

  const Json named = Anthropic(
      *server_,
      OJson{{"model", "qwen3.warp"},
            {"messages", {kAsk}},
            {"tools", tools},
            {"tool_choice",
             {{"type", "tool"}, {"name", "get_time"}, {"disable_parallel_tool_use", true}}},
            {"max_tokens", 96},
            {"temperature", 0}});
  ASSERT_EQ(named["message"]["content"].size(), 1u) << named;
  EXPECT_EQ(named["message"]["content"][0]["name"], "get_time") << named["message"];

  const Json second = Anthropic(
      *server_,
      OJson{{"model", "qwen3.warp"},
            {"messages",
             {kAsk,
              {{"role", "assistant"}, {"content", OJson::parse(message["content"].dump())}},
              {{"role", "user"},
               {"content",
                {{{"type", "tool_result"},
                  {"tool_use_id", use["id"]},
                  {"content", R"({"celsius": 21})"}}}}}}},
            {"tools", tools},
            {"max_tokens", 4},
            {"temperature", 0}});
  EXPECT_EQ(second["message"]["stop_reason"], "max_tokens") << second;
  EXPECT_GT(second["message"]["usage"]["input_tokens"].get<int>() +
                second["message"]["usage"]["cache_read_input_tokens"].get<int>(),
            message["usage"]["input_tokens"].get<int>() + 20);
}

}  // namespace
