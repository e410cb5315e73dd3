// Kimi's text layer through a converted release: the kimi_linear and kimi_k3
// fixtures (vocab 256; KDA and MLA layers), and for chat over recurrent and
// compressed state deepseek_v4 and glm5_next, each given a Kimi-style
// tokenizer (a tiktoken.model and a tokenizer_config.json with Kimi's special
// tokens and chat template), through convert, tokenize, template, run and
// chat. Chat rewinds KDA layers to the checkpoint at the end of the last
// prompt (V4's compressors within their open window) and still answers what a
// fresh run over the conversation answers.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/format/container.h"
#include "computed/run/model_text.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/computed/chat_transcript.h"
#include "tests/testing/interactive_process.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::warp::testing::RunBinary;

// Byte tokens 0x00..0xF7, ranked by value: the bytes from 0xF8 never occur in
// UTF-8, which leaves the fixture's last 8 ids for the special tokens.
constexpr int kByteTokens = 248;
// Kimi's special tokens in the order of its tokenizer_config.json (163584
// [BOS], 163585 [EOS], 163586 <|im_end|>, ... 163839 [PAD]), renumbered from 248.
constexpr const char* kSpecials[] = {
    "[BOS]",         "[EOS]",         "<|im_end|>", "<|im_user|>", "<|im_assistant|>",
    "<|im_system|>", "<|im_middle|>", "[PAD]"};
constexpr int32_t kBos = 248, kImEnd = 250, kImUser = 251, kImSystem = 253, kImMiddle = 254;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

fs::path KimiTemplate() { return warp::testing::SourceDir() / "tests/chat/templates/kimi.jinja"; }

// The kimi_linear fixture as a Kimi release ships it: config.json with the
// release's bos/eos (Kimi-Linear: bos 163584 [BOS], eos 163586 <|im_end|>)
// and, with `tiktoken`, tiktoken.model; with `tokenizer_config`,
// tokenizer_config.json with the special tokens and the chat template.
void WriteKimiRelease(const fs::path& dir, const std::string& fixture, bool tiktoken,
                      bool tokenizer_config) {
  fs::copy(warp::testing::FixtureDir(fixture), dir, fs::copy_options::recursive);
  json config = json::parse(ReadFile(dir / "config.json"));
  config["bos_token_id"] = kBos;
  config["eos_token_id"] = kImEnd;
  std::ofstream(dir / "config.json") << config.dump(2);
  if (tiktoken) {
    std::ofstream ranks(dir / "tiktoken.model");
    for (int byte = 0; byte < kByteTokens; ++byte) {
      ranks << absl::Base64Escape(std::string(1, static_cast<char>(byte))) << " " << byte << "\n";
    }
  }
  if (tokenizer_config) {
    json decoder = json::object();
    for (int i = 0; i < static_cast<int>(std::size(kSpecials)); ++i) {
      decoder[std::to_string(kByteTokens + i)] = {{"content", kSpecials[i]}, {"lstrip", false},
                                                  {"normalized", false},     {"rstrip", false},
                                                  {"single_word", false},    {"special", true}};
    }
    const json tokenizer = {
        {"added_tokens_decoder", decoder},
        {"additional_special_tokens",
         {"<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>"}},
        {"bos_token", "[BOS]"},
        {"chat_template", ReadFile(KimiTemplate())},
        {"clean_up_tokenization_spaces", false},
        {"eos_token", "[EOS]"},
        {"model_max_length", 1048576},
        {"pad_token", "[PAD]"},
        {"tokenizer_class", "TikTokenTokenizer"}};
    std::ofstream(dir / "tokenizer_config.json") << tokenizer.dump(2);
  }
}

// Converts `hf` to `out`; returns the converter's output.
std::string Convert(const fs::path& hf, const fs::path& out) {
  auto result =
      RunBinary("computed", "--log-level warn convert --quiet " + hf.string() + " " + out.string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return result.output;
}

// Each fixture's release converted once for the suite, and its text layer
// loaded in process to compute what the commands should give.
class KimiTextTest : public ::testing::TestWithParam<std::string> {
 protected:
  struct Converted {
    warp::testing::TempDir dir;
    std::string convert_output;
    std::unique_ptr<ModelText> text;
  };

  static void TearDownTestSuite() { converted_.clear(); }

  void SetUp() override {
    std::unique_ptr<Converted>& slot = converted_[GetParam()];
    if (slot == nullptr) {
      slot = std::make_unique<Converted>();
      WriteKimiRelease(slot->dir / "kimi-hf", GetParam(), /*tiktoken=*/true,
                       /*tokenizer_config=*/true);
      slot->convert_output = Convert(slot->dir / "kimi-hf", slot->dir / "kimi.warp");
      absl::StatusOr<ModelText> text = LoadModelText(slot->dir / "kimi.warp");
      ASSERT_TRUE(text.ok()) << text.status();
      slot->text = std::make_unique<ModelText>(*std::move(text));
    }
    converted = slot.get();
  }

  fs::path Dir() const { return converted->dir.path(); }
  fs::path Release() const { return Dir() / "kimi-hf"; }
  fs::path Model() const { return Dir() / "kimi.warp"; }
  const ModelText& Text() const { return *converted->text; }

  std::vector<int32_t> PromptIds(const nlohmann::json& messages) const {
    return computed::PromptIds(Text(), messages);
  }
  std::string FreshReply(const std::vector<int32_t>& prompt, int max_tokens) const {
    return computed::FreshReply(Model(), Text(), prompt, max_tokens);
  }

  // `computed template` over `messages_json`.
  std::string Render(const std::string& messages_json, bool add_generation_prompt) const {
    const fs::path file = Dir() / "messages.json";
    std::ofstream(file) << messages_json;
    auto result = RunBinary(
        "computed", absl::StrCat("--log-level warn template ",
                                 add_generation_prompt ? "--add-generation-prompt " : "",
                                 "--tokenizer ", Model().string(), " --messages ", file.string()));
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return result.output;
  }

  static inline std::map<std::string, std::unique_ptr<Converted>> converted_;
  Converted* converted = nullptr;
};

// tiktoken.model and tokenizer_config.json are copied as they are; the
// template inside tokenizer_config.json becomes chat_template.jinja.
TEST_P(KimiTextTest, ConvertCopiesTheTokenizerAndWritesTheTemplateOut) {
  EXPECT_THAT(converted->convert_output, ::testing::Not(HasSubstr("warn")));
  auto container = Container::Open(Model());
  ASSERT_TRUE(container.ok()) << container.status();
  const auto& tokenizer = (*container)->manifest().tokenizer;
  ASSERT_TRUE(tokenizer.has_value());
  EXPECT_THAT(tokenizer->files,
              ::testing::UnorderedElementsAre("tokenizer_config.json", "tiktoken.model"));
  EXPECT_EQ(tokenizer->chat_template, "chat_template.jinja");
  EXPECT_EQ(ReadFile(Model() / "chat_template.jinja"), ReadFile(KimiTemplate()));
  EXPECT_EQ(ReadFile(Model() / "tiktoken.model"), ReadFile(Release() / "tiktoken.model"));
  EXPECT_EQ(ReadFile(Model() / "tokenizer_config.json"),
            ReadFile(Release() / "tokenizer_config.json"));
  EXPECT_EQ(Text().tokenizer->vocab_size(), 256);
  EXPECT_THAT(Text().stop_ids, ::testing::ElementsAre(kImEnd));  // config.json eos_token_id
}

TEST_P(KimiTextTest, TokenizeRoundTripsTextWithSpecialTokens) {
  const std::string text = "<|im_system|>system<|im_middle|>Grüße, 世界 — 42!<|im_end|>";
  std::vector<int32_t> expected = {kImSystem};
  for (unsigned char byte : std::string("system")) expected.push_back(byte);
  expected.push_back(kImMiddle);
  for (unsigned char byte : std::string("Grüße, 世界 — 42!")) expected.push_back(byte);
  expected.push_back(kImEnd);
  for (const fs::path& tokenizer : {Model(), Release() / "tiktoken.model"}) {
    SCOPED_TRACE(tokenizer.string());
    auto ids = RunBinary("computed", "--log-level warn tokenize --tokenizer " + tokenizer.string() +
                                         " '" + text + "'");
    ASSERT_EQ(ids.exit_code, 0) << ids.output;
    EXPECT_EQ(Printed(ids.output), Ids(expected));
  }
  auto decoded = RunBinary("computed", "--log-level warn tokenize --tokenizer " + Model().string() +
                                           " --decode " + Ids(expected));
  EXPECT_EQ(Printed(decoded.output), text);
  auto skipped =
      RunBinary("computed", "--log-level warn tokenize --skip-special-tokens --tokenizer " +
                                Model().string() + " --decode " + Ids(expected));
  EXPECT_EQ(Printed(skipped.output), "systemGrüße, 世界 — 42!");
  // tokenizer_config.json sets no add_bos_token: the post-processor adds nothing.
  auto with_specials = RunBinary("computed",
                                 "--log-level warn tokenize --add-special-tokens "
                                 "--tokenizer " +
                                     Model().string() + " '[BOS]<|im_user|>'");
  EXPECT_EQ(Printed(with_specials.output), absl::StrCat(kBos, ",", kImUser));
}

// Kimi's format: every turn is <|im_ROLE|>ROLE<|im_middle|>CONTENT<|im_end|>,
// with no separators, and a default system turn when the first is not one.
TEST_P(KimiTextTest, TemplateRendersKimisFormat) {
  EXPECT_EQ(Render(R"([{"role": "system", "content": "You are Kimi."},
                       {"role": "user", "content": "Hello"}])",
                   /*add_generation_prompt=*/true),
            "<|im_system|>system<|im_middle|>You are Kimi.<|im_end|>"
            "<|im_user|>user<|im_middle|>Hello<|im_end|>"
            "<|im_assistant|>assistant<|im_middle|>");
  EXPECT_EQ(Render(R"([{"role": "user", "content": "Hello"},
                       {"role": "assistant", "content": "Hi!"}])",
                   /*add_generation_prompt=*/false),
            "<|im_system|>system<|im_middle|>You are a helpful assistant<|im_end|>"
            "<|im_user|>user<|im_middle|>Hello<|im_end|>"
            "<|im_assistant|>assistant<|im_middle|>Hi!<|im_end|>");
}

TEST_P(KimiTextTest, RunAppliesTheTemplateAndGenerates) {
  auto run = RunBinary("computed", "--log-level warn run " + Model().string() +
                                       " Hello --system 'You are Kimi.' -n 8 --ignore-eos");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const std::vector<int32_t> prompt = PromptIds({{{"role", "system"}, {"content", "You are Kimi."}},
                                                 {{"role", "user"}, {"content", "Hello"}}});
  EXPECT_FALSE(Printed(run.output).empty());
  EXPECT_EQ(Printed(run.output), FreshReply(prompt, 8));
}

// Each turn keeps the previous prompt but its last token from the KV cache:
// the KDA layers' recurrent state returns to the checkpoint taken there (the
// MLA layers keep every position), and the reply is a fresh run's, byte for byte.
TEST_P(KimiTextTest, ChatRewindsTheRecurrentStateToTheLastPrompt) {
  const std::vector<std::string> lines = {"Hello", "And then?", "Thank you."};
  warp::testing::InteractiveProcess chat(
      "computed", {"--log-level", "warn", "chat", Model().string(), "-n", "8", "--ignore-eos"});
  ASSERT_TRUE(chat.started());
  for (const std::string& line : lines) chat.Write(line + "\n");
  chat.CloseStdin();  // Ctrl-D: quits after the last reply
  ASSERT_EQ(chat.Wait(), 0) << chat.output();
  const std::vector<ChatTurn> turns = ChatTurns(chat.output());
  ASSERT_EQ(turns.size(), lines.size()) << chat.output();
  nlohmann::json messages = nlohmann::json::array();
  size_t previous_prompt = 0;
  for (size_t turn = 0; turn < lines.size(); ++turn) {
    SCOPED_TRACE(absl::StrCat("turn ", turn + 1));
    const std::string& reply = turns[turn].reply;
    const std::string& stats_line = turns[turn].stats;
    messages.push_back({{"role", "user"}, {"content", lines[turn]}});
    const std::vector<int32_t> prompt = PromptIds(messages);
    // KDA layers return to the checkpoint exactly; DeepSeek V4's compressors
    // (no KDA) continue within their open window, so from there or later.
    const size_t checkpoint = turn == 0 ? 0 : previous_prompt - 1;
    size_t fresh = 0, reused = 0;
    ASSERT_EQ(std::sscanf(stats_line.c_str() + stats_line.find("| prompt "),
                          "| prompt %zu new + %zu from the KV cache", &fresh, &reused),
              2)
        << stats_line;
    EXPECT_EQ(fresh + reused, prompt.size()) << stats_line;
    if (GetParam().starts_with("deepseek_v4")) {
      EXPECT_GE(reused, checkpoint) << stats_line;
    } else {
      EXPECT_EQ(reused, checkpoint) << stats_line;
    }
    EXPECT_EQ(reply, FreshReply(prompt, 8));
    messages.push_back({{"role", "assistant"}, {"content", reply}});
    previous_prompt = prompt.size();
  }
}

// A release whose tokenizer files are missing converts, warning what it
// lacks, and each command then names what the container lacks.
TEST_P(KimiTextTest, AReleaseWithoutItsTokenizerSaysWhatIsMissing) {
  const fs::path bare = Dir() / "bare-hf", bare_model = Dir() / "bare.warp";
  WriteKimiRelease(bare, GetParam(), /*tiktoken=*/false, /*tokenizer_config=*/false);
  EXPECT_THAT(Convert(bare, bare_model),
              HasSubstr("bare-hf: no tokenizer.json or tiktoken.model; the container takes and "
                        "prints token ids"));
  auto chat = RunBinary("computed", "--log-level warn chat " + bare_model.string());
  EXPECT_EQ(chat.exit_code, 1);
  EXPECT_THAT(chat.output, HasSubstr("the container has no tokenizer (manifest \"tokenizer\" is "
                                     "null); give token ids, or convert a release that ships one"));
  auto text = RunBinary("computed", "--log-level warn run " + bare_model.string() + " Hello -n 2");
  EXPECT_EQ(text.exit_code, 1);
  EXPECT_THAT(text.output,
              HasSubstr("the model has no tokenizer, so the prompt must be token ids"));
  auto ids = RunBinary("computed", "--log-level warn run " + bare_model.string() + " 1,2,3 -n 2");
  EXPECT_EQ(ids.exit_code, 0) << ids.output;

  // tokenizer_config.json, template and all, without the tiktoken.model it goes with.
  const fs::path half = Dir() / "half-hf", half_model = Dir() / "half.warp";
  WriteKimiRelease(half, GetParam(), /*tiktoken=*/false, /*tokenizer_config=*/true);
  EXPECT_THAT(Convert(half, half_model), HasSubstr("half-hf: no tokenizer.json or tiktoken.model"));
  const fs::path messages = Dir() / "one.json";
  std::ofstream(messages) << R"([{"role": "user", "content": "Hello"}])";
  for (const std::string& command :
       {std::string("chat "), "template --messages " + messages.string() + " --tokenizer "}) {
    auto result = RunBinary("computed", "--log-level warn " + command + half_model.string());
    EXPECT_EQ(result.exit_code, 1);
    EXPECT_THAT(result.output, HasSubstr("the manifest names no tokenizer.json or tiktoken.model "
                                         "among its tokenizer files"));
  }
}

INSTANTIATE_TEST_SUITE_P(Families, KimiTextTest,
                         ::testing::Values("kimi_linear_bf16", "kimi_k3_mxfp4", "deepseek_v4_native",
                                           "glm5_next_bf16"));

}  // namespace
}  // namespace warp::computed
