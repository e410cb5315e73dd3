// ChatTemplate: reading tokenizer_config.json, the special tokens, and the
// render context transformers passes.

#include <fstream>

#include "computed/chat/chat_template.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::chat {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using warp::testing::StatusIs;

class ChatTemplateTest : public ::testing::Test {
 protected:
  std::filesystem::path WriteConfig(const json& config) {
    const auto path = dir_ / "tokenizer_config.json";
    std::ofstream(path) << config.dump();
    return path;
  }
  warp::testing::TempDir dir_;
};

const json kUser = json::parse(R"([{"role": "user", "content": "hi"}])");

TEST_F(ChatTemplateTest, LoadsAStringTemplateAndTheSpecialTokens) {
  auto path = WriteConfig({{"chat_template", "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"},
                           {"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}}},
                           {"eos_token", "</s>"},
                           {"unk_token", nullptr},
                           {"add_bos_token", true}});
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Load(path);
  WARP_ASSERT_OK(tmpl);
  EXPECT_EQ(tmpl->special_tokens(), json({{"bos_token", "<s>"}, {"eos_token", "</s>"}}));
  EXPECT_EQ(*tmpl->Render(kUser, false), "<s>hi</s>");
}

TEST_F(ChatTemplateTest, PicksTheDefaultOfANamedList) {
  auto path = WriteConfig({{"chat_template", json::array({{{"name", "tool_use"}, {"template", "tools"}},
                                                          {{"name", "default"}, {"template", "default"}}})}});
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Load(path);
  WARP_ASSERT_OK(tmpl);
  EXPECT_EQ(tmpl->source(), "default");
  auto no_default = WriteConfig({{"chat_template", json::array({{{"name", "rag"}, {"template", "x"}}})}});
  EXPECT_THAT(ChatTemplate::Load(no_default), StatusIs(absl::StatusCode::kNotFound, HasSubstr("no \"default\" template (has: rag)")));
}

TEST_F(ChatTemplateTest, NoTemplateIsNotFoundNamingTheFile) {
  auto path = WriteConfig({{"bos_token", "<s>"}});
  EXPECT_THAT(ChatTemplate::Load(path),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr(path.string() + ": no chat_template")));
  EXPECT_THAT(ChatTemplate::Load(dir_ / "missing.json"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.json")));
}

TEST_F(ChatTemplateTest, PrefersChatTemplateJinjaBesideTheConfig) {
  auto path = WriteConfig({{"eos_token", "</s>"}, {"chat_template", "from the config"}});
  std::ofstream(dir_ / "chat_template.jinja") << "{{ messages | length }}{{ eos_token }}\n";
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Load(path);
  WARP_ASSERT_OK(tmpl);
  EXPECT_EQ(*tmpl->Render(kUser, true), "1</s>");
}

TEST_F(ChatTemplateTest, BadConfigsNameTheFileAndTheField) {
  std::ofstream(dir_ / "broken.json") << "{\"chat_template\": ";
  EXPECT_THAT(ChatTemplate::Load(dir_ / "broken.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("broken.json: invalid JSON")));
  EXPECT_THAT(ChatTemplate::Load(WriteConfig({{"chat_template", 42}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("chat_template: expected a string")));
  EXPECT_THAT(ChatTemplate::Load(WriteConfig({{"chat_template", "x"}, {"bos_token", 7}})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bos_token: expected a string")));
  EXPECT_THAT(ChatTemplate::Load(WriteConfig({{"chat_template", "{% include 'x' %}"}})),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("tokenizer_config.json chat_template line 1, column 4: unsupported Jinja feature")));
}

TEST_F(ChatTemplateTest, ContextIsWhatTransformersPasses) {
  absl::StatusOr<ChatTemplate> tmpl =
      ChatTemplate::FromSource("{{ tools is none }} {{ documents is none }} {{ add_generation_prompt }} {{ bos_token }}",
                               "t.jinja", {{"bos_token", {{"content", "<s>"}}}, {"pad_token", nullptr}});
  WARP_ASSERT_OK(tmpl);
  EXPECT_EQ(tmpl->special_tokens(), json({{"bos_token", "<s>"}}));
  EXPECT_EQ(*tmpl->Render(kUser, true), "True True True <s>");  // Python prints True (issue 16)
  const json context = tmpl->MakeContext(kUser, false, {{"enable_thinking", false}});
  EXPECT_EQ(context, json({{"messages", kUser}, {"add_generation_prompt", false}, {"tools", nullptr},
                           {"documents", nullptr}, {"bos_token", "<s>"}, {"enable_thinking", false}}));
}

// transformers passes special_tokens_map: the single tokens that are set, and
// additional_special_tokens as a list of strings.
TEST_F(ChatTemplateTest, SpecialTokensAreTransformersSpecialTokensMap) {
  const json config = {{"bos_token", nullptr},
                       {"eos_token", "<|im_end|>"},
                       {"sep_token", {{"content", "<sep>"}}},
                       {"cls_token", "<cls>"},
                       {"mask_token", "<mask>"},
                       {"additional_special_tokens", {"<a>", {{"content", "<b>"}}}},
                       {"model_max_length", 8}};
  absl::StatusOr<json> tokens = ChatTemplate::SpecialTokensOf(config, "c.json");
  WARP_ASSERT_OK(tokens);
  EXPECT_EQ(*tokens, json({{"eos_token", "<|im_end|>"},
                           {"sep_token", "<sep>"},
                           {"cls_token", "<cls>"},
                           {"mask_token", "<mask>"},
                           {"additional_special_tokens", {"<a>", "<b>"}}}));
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::Load(
      WriteConfig({{"chat_template", "{{ additional_special_tokens | join(',') }}|{{ sep_token }}"},
                   {"additional_special_tokens", {"<a>", "<b>"}},
                   {"sep_token", "<sep>"}}));
  WARP_ASSERT_OK(tmpl);
  EXPECT_EQ(*tmpl->Render(kUser, false), "<a>,<b>|<sep>");
  EXPECT_THAT(
      ChatTemplate::SpecialTokensOf({{"additional_special_tokens", "<a>"}}, "c.json"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("c.json: additional_special_tokens: expected a list, got string")));
  EXPECT_THAT(ChatTemplate::SpecialTokensOf({{"additional_special_tokens", {1}}}, "c.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("c.json: additional_special_tokens[0]: expected a string")));
  EXPECT_THAT(ChatTemplate::FromSource("x", "t.jinja", {{"additional_special_tokens", 3}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected a list")));
}

// Tool definitions reach tojson in the order they were written, as the dicts
// transformers is given do (Render's nlohmann::json would sort them).
TEST_F(ChatTemplateTest, RenderOrderedKeepsTheKeyOrderOfTools) {
  absl::StatusOr<ChatTemplate> tmpl =
      ChatTemplate::FromSource("{{ tools | tojson }}|{{ messages[0] | tojson }}|{{ bos_token }}",
                               "t.jinja", {{"bos_token", "<s>"}});
  WARP_ASSERT_OK(tmpl);
  const auto tools = nlohmann::ordered_json::parse(
      R"({"tools": [{"type": "function", "function": {"name": "f", "description": "d"}}]})");
  const auto messages = nlohmann::ordered_json::parse(R"([{"role": "user", "content": "hi"}])");
  EXPECT_EQ(*tmpl->RenderOrdered(messages, false, tools),
            R"([{"type": "function", "function": {"name": "f", "description": "d"}}]|)"
            R"({"role": "user", "content": "hi"}|<s>)");
  EXPECT_THAT(
      tmpl->RenderOrdered(nlohmann::ordered_json::object(), false, tools),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages must be a JSON array")));
}

TEST_F(ChatTemplateTest, ExtraContextOverridesAndBadInputsFail) {
  absl::StatusOr<ChatTemplate> tmpl = ChatTemplate::FromSource("{{ tools | length }}", "t.jinja", json::object());
  WARP_ASSERT_OK(tmpl);
  EXPECT_EQ(*tmpl->Render(kUser, false, {{"tools", {1, 2}}}), "2");
  EXPECT_THAT(tmpl->Render(json::object(), false), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("messages must be a JSON array")));
  EXPECT_THAT(ChatTemplate::FromSource("x", "t.jinja", json::array()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("special tokens must be a JSON object")));
}

}  // namespace
}  // namespace warp::chat
