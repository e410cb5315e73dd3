// The C API's model and text calls: tokenize, detokenize and the chat
// template against the `computed` commands, and the failures, each with its
// code and a message naming what was wrong.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "tests/api/api_fixture.h"

namespace warp::api {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::warp::testing::RunBinary;

std::string Render(const warp_model* model, const char* messages, bool add_generation_prompt,
                   const char* tools = nullptr, const char* kwargs = nullptr) {
  char* prompt = nullptr;
  size_t length = 0;
  EXPECT_EQ(warp_apply_chat_template(model, messages, add_generation_prompt, tools, kwargs, &prompt,
                                     &length),
            WARP_OK)
      << warp_last_error();
  std::string out(prompt != nullptr ? prompt : "", length);
  warp_free(prompt);
  return out;
}

// `computed template` on the same messages.
std::string CliRender(const std::string& messages, const std::string& flags) {
  const fs::path file = ScratchDir() / "messages.json";
  std::ofstream(file) << messages;
  auto result = RunBinary("computed", "--log-level warn template --tokenizer " + DemoModel() +
                                          " --messages " + file.string() + " " + flags);
  EXPECT_EQ(result.exit_code, 0) << result.output;
  return result.output;
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ApiTextTest, VersionAndStatusNames) {
  EXPECT_EQ(warp_api_version(), WARP_API_VERSION);
  EXPECT_STREQ(warp_status_name(WARP_OUT_OF_RANGE), "WARP_OUT_OF_RANGE");
  EXPECT_STREQ(warp_status_name(WARP_ALREADY_EXISTS), "WARP_ALREADY_EXISTS");
  EXPECT_STREQ(warp_status_name(static_cast<warp_status>(99)), "WARP_UNKNOWN_STATUS");
}

TEST(ApiTextTest, TokenizeMatchesTheCliAndDecodesBack) {
  ModelPtr model = OpenModel(DemoOptions());
  const std::string text = "And the LORD said unto Moses,";
  const std::vector<int32_t> ids = Tokenize(model.get(), text, /*add_special_tokens=*/false);
  auto cli = RunBinary("computed",
                       "--log-level warn tokenize --tokenizer " + DemoModel() + " '" + text + "'");
  ASSERT_EQ(cli.exit_code, 0) << cli.output;
  std::string joined;
  for (int32_t id : ids) joined += (joined.empty() ? "" : ",") + std::to_string(id);
  EXPECT_EQ(joined, Printed(cli.output));
  EXPECT_EQ(joined, "295,258,340,387,319,686,44");  // tests/demo_model's reference

  char* decoded = nullptr;
  size_t length = 0;
  ASSERT_EQ(warp_detokenize(model.get(), ids.data(), ids.size(), 1, &decoded, &length), WARP_OK)
      << warp_last_error();
  EXPECT_EQ(std::string(decoded, length), text);
  EXPECT_STREQ(warp_last_error(), "");
  warp_free(decoded);
  uint32_t vocab = 0;
  ASSERT_EQ(warp_model_vocab_size(model.get(), &vocab), WARP_OK);
  EXPECT_GT(vocab, 686u);
}

TEST(ApiTextTest, ChatTemplateMatchesComputedTemplate) {
  ModelPtr model = OpenModel(DemoOptions());
  const std::string messages =
      R"([{"role": "system", "content": "Answer in the words of the King James Bible."},
          {"role": "user", "content": "Who made the heaven?"},
          {"role": "assistant", "content": "God created the heaven and the earth."},
          {"role": "user", "content": "And the light?"}])";
  EXPECT_EQ(Render(model.get(), messages.c_str(), true),
            CliRender(messages, "--add-generation-prompt"));
  EXPECT_EQ(Render(model.get(), messages.c_str(), false), CliRender(messages, ""));
  // {"messages": [...]} as the CLI takes it, and a kwarg the template ignores.
  const std::string wrapped = "{\"messages\": " + messages + "}";
  EXPECT_EQ(Render(model.get(), wrapped.c_str(), true, "[]", R"({"enable_thinking": false})"),
            CliRender(messages, "--add-generation-prompt"));
}

TEST(ApiTextTest, AMissingModelIsNotFoundNamingThePath) {
  warp_model_options options = DemoOptions();
  const std::string missing = (ScratchDir() / "gone.warp").string();
  options.path = missing.c_str();
  warp_model* model = reinterpret_cast<warp_model*>(1);
  EXPECT_EQ(warp_model_open(&options, &model), WARP_NOT_FOUND);
  EXPECT_THAT(warp_last_error(), HasSubstr("gone.warp: no such file or directory"));
  EXPECT_EQ(model, nullptr);
}

TEST(ApiTextTest, ADirectoryThatIsNotAContainerIsRefusedNamingIt) {
  const fs::path dir = ScratchDir() / "not-a-model";
  fs::create_directories(dir);
  warp_model_options options = DemoOptions();
  const std::string path = dir.string();
  options.path = path.c_str();
  warp_model* model = nullptr;
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr(path + ": not a .warp container (no manifest.json)"));
  // A file is not a model either.
  const std::string file = (ScratchDir() / "model.gguf").string();
  std::ofstream(file) << "GGUF";
  options.path = file.c_str();
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("model.gguf: not a directory"));
  // Nor is a corrupt manifest: the container's own check names the file.
  const fs::path broken = ScratchDir() / "broken.warp";
  fs::create_directories(broken);
  std::ofstream(broken / "manifest.json") << "{";
  const std::string broken_path = broken.string();
  options.path = broken_path.c_str();
  EXPECT_NE(warp_model_open(&options, &model), WARP_OK);
  EXPECT_THAT(warp_last_error(), HasSubstr("manifest.json"));
}

TEST(ApiTextTest, BadOptionsAreRefusedNamingTheField) {
  warp_model* model = nullptr;
  warp_model_options options = DemoOptions();
  options.io_threads = 100000;
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.io_threads: 100000"));
  options = DemoOptions();
  options.activations = "int4";
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.activations: \"int4\" is not f32 or q8"));
  options = DemoOptions();
  options.struct_size = 0;
  EXPECT_EQ(warp_model_open(&options, &model), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("struct_size"));
  EXPECT_EQ(warp_model_open(nullptr, &model), WARP_INVALID_ARGUMENT);
  EXPECT_STREQ(warp_last_error(), "options is NULL");
}

TEST(ApiTextTest, BadTemplateInputNamesTheArgumentAndElement) {
  ModelPtr model = OpenModel(DemoOptions());
  char* prompt = nullptr;
  auto render = [&](const char* messages, const char* tools, const char* kwargs) {
    return warp_apply_chat_template(model.get(), messages, 1, tools, kwargs, &prompt, nullptr);
  };
  EXPECT_EQ(render(R"([{"role": "user", "content": "hi"})", nullptr, nullptr),
            WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("messages_json: not valid JSON"));
  EXPECT_EQ(render(R"([{"role": "user"}, {"content": "no role"}])", nullptr, nullptr),
            WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("messages_json: messages[1]: expected an object"));
  EXPECT_EQ(render(R"({"role": "user"})", nullptr, nullptr), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("messages_json: expected a list"));
  const char* ok = R"([{"role": "user", "content": "hi"}])";
  EXPECT_EQ(render(ok, R"({"type": "function"})", nullptr), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("tools_json: expected a JSON array"));
  EXPECT_EQ(render(ok, "[1]", nullptr), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("tools_json: [0]: expected an object"));
  EXPECT_EQ(render(ok, nullptr, R"({"add_generation_prompt": true})"), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(),
              HasSubstr("template_kwargs_json: \"add_generation_prompt\" is not a template kwarg"));
  EXPECT_EQ(render(nullptr, nullptr, nullptr), WARP_INVALID_ARGUMENT);
  EXPECT_STREQ(warp_last_error(), "messages_json is NULL");
  EXPECT_EQ(prompt, nullptr);
}

TEST(ApiTextTest, ATokenIdOutOfRangeIsNamed) {
  ModelPtr model = OpenModel(DemoOptions());
  const int32_t ids[] = {295, 99999};
  char* text = nullptr;
  EXPECT_EQ(warp_detokenize(model.get(), ids, 2, 0, &text, nullptr), WARP_OUT_OF_RANGE);
  EXPECT_THAT(warp_last_error(), HasSubstr("ids[1]: token 99999 is outside the tokenizer's"));
  const int32_t negative[] = {-3};
  EXPECT_EQ(warp_detokenize(model.get(), negative, 1, 0, &text, nullptr), WARP_OUT_OF_RANGE);
  EXPECT_THAT(warp_last_error(), HasSubstr("token -3"));
  EXPECT_EQ(text, nullptr);
}

// docs/ENGINE.md shows tests/api/c_example.c as it is: the block after the
// "<!-- golden:c_example -->" marker.
TEST(ApiTextTest, TheDocumentedExampleIsTheTestedOne) {
  const std::string doc = ReadFile(warp::testing::SourceDir() / "docs/ENGINE.md");
  const std::string marker = "<!-- golden:c_example -->\n```c\n";
  const size_t begin = doc.find(marker);
  ASSERT_NE(begin, std::string::npos) << "no c_example block in docs/ENGINE.md";
  const size_t start = begin + marker.size();
  EXPECT_EQ(doc.substr(start, doc.find("```", start) - start),
            ReadFile(warp::testing::SourceDir() / "tests/api/c_example.c"));
}

// The C example (compiled as C11) answers as `computed run` does.
TEST(ApiTextTest, TheCExampleGeneratesWhatComputedRunDoes) {
  const std::string command = std::string(WARP_C_EXAMPLE) + " " + DemoModel() + " 2>&1";
  FILE* pipe = ::popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, n);
  ASSERT_EQ(::pclose(pipe), 0) << output;
  EXPECT_THAT(output, HasSubstr("\n[prefill "));
  auto cli = RunBinary("computed", "--log-level warn run " + DemoModel() +
                                       " 'Who made the heaven?' -n 24 --budget 64M");
  ASSERT_EQ(cli.exit_code, 0) << cli.output;
  EXPECT_EQ(Printed(output), Printed(cli.output));
  EXPECT_FALSE(Printed(output).empty());
}

}  // namespace
}  // namespace warp::api
