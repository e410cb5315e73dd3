// The C API's warp_convert against `computed convert`: the same bytes, and the
// failures, each with its code and a message naming the field or the file,
// leaving no model behind and an existing one untouched.

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "tests/api/api_fixture.h"

namespace warp::api {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::RunBinary;

const fs::path kCheckpoint = warp::testing::SourceDir() / "tests/demo_model/kjv-moe";

// Every file of a directory, by name.
std::map<std::string, std::string> Files(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    files[entry.path().filename().string()] =
        std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return files;
}

warp_convert_options Options(const std::string& source, const std::string& out) {
  warp_convert_options options;
  warp_convert_options_init(&options);
  // Static storage: the struct holds the pointers.
  static std::string kept_source, kept_out;
  kept_source = source;
  kept_out = out;
  options.source = kept_source.c_str();
  options.out = kept_out.c_str();
  return options;
}

// (Without folds here; the default's are in AnExistingModelIsRefusedAndStillOpens.)
TEST(ApiConvertTest, WritesTheBytesTheCliWritesAndTheModelOpens) {
  const std::string cli_out = (ScratchDir() / "cli-q4.warp").string();
  auto cli =
      RunBinary("computed", "--log-level warn convert --quiet " + kCheckpoint.string() + " " +
                                cli_out + " --experts q4 --trunk bf16 --no-early-route-folds");
  ASSERT_EQ(cli.exit_code, 0) << cli.output;
  const std::string api_out = (ScratchDir() / "api-q4.warp").string();
  warp_convert_options options = Options(kCheckpoint.string(), api_out);
  options.experts = "q4";
  options.trunk = "bf16";
  options.early_route_folds = 0;
  ASSERT_EQ(warp_convert(&options), WARP_OK) << warp_last_error();
  const std::map<std::string, std::string> expected = Files(cli_out), written = Files(api_out);
  ASSERT_EQ(written.size(), expected.size());
  for (const auto& [name, bytes] : expected) {
    ASSERT_TRUE(written.contains(name)) << name;
    EXPECT_TRUE(written.at(name) == bytes) << name << " differs";
  }
  EXPECT_THAT(written.at("manifest.json"), ::testing::Not(HasSubstr("o_proj_fold")));
  warp_model_options model_options = DemoOptions();
  model_options.path = api_out.c_str();
  ModelPtr model = OpenModel(model_options);
  uint32_t vocab = 0;
  ASSERT_EQ(warp_model_vocab_size(model.get(), &vocab), WARP_OK);
  EXPECT_GT(vocab, 0u);
}

TEST(ApiConvertTest, BadOptionsAreNamed) {
  EXPECT_EQ(warp_convert(nullptr), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options is NULL"));
  const std::string out = (ScratchDir() / "never.warp").string();
  warp_convert_options options = Options(kCheckpoint.string(), out);
  options.source = nullptr;
  EXPECT_EQ(warp_convert(&options), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.source is NULL"));
  options = Options(kCheckpoint.string(), "");
  EXPECT_EQ(warp_convert(&options), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.out is empty"));
  options = Options(kCheckpoint.string(), out);
  options.experts = "q5";
  EXPECT_EQ(warp_convert(&options), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.experts: \"q5\" is not native, q8, q4, vq3r"));
  options = Options(kCheckpoint.string(), out);
  options.trunk = "f16";
  EXPECT_EQ(warp_convert(&options), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options.trunk: \"f16\" is not native, bf16, q8"));
  options = Options(kCheckpoint.string(), out);
  options.struct_size = 0;
  EXPECT_EQ(warp_convert(&options), WARP_INVALID_ARGUMENT);
  EXPECT_THAT(warp_last_error(), HasSubstr("options->struct_size is 0"));
  EXPECT_FALSE(fs::exists(out));
}

TEST(ApiConvertTest, ACheckpointThatIsNotThereOrIsCutShortIsNamedAndLeavesNoModel) {
  const fs::path out = ScratchDir() / "failed.warp";
  const std::string missing = (ScratchDir() / "no-such-checkpoint").string();
  warp_convert_options options = Options(missing, out.string());
  EXPECT_NE(warp_convert(&options), WARP_OK);
  EXPECT_THAT(warp_last_error(), HasSubstr(missing));
  EXPECT_FALSE(fs::exists(out / "manifest.json"));

  // A checkpoint whose weights file is cut short.
  const fs::path cut = ScratchDir() / "cut-checkpoint";
  fs::copy(kCheckpoint, cut);
  fs::path weights;
  for (const fs::directory_entry& entry : fs::directory_iterator(cut)) {
    if (entry.path().extension() == ".safetensors") weights = entry.path();
  }
  ASSERT_FALSE(weights.empty());
  fs::resize_file(weights, fs::file_size(weights) / 2);
  options = Options(cut.string(), out.string());
  EXPECT_NE(warp_convert(&options), WARP_OK);
  EXPECT_THAT(warp_last_error(), HasSubstr(weights.filename().string()));
  EXPECT_FALSE(fs::exists(out / "manifest.json"));
}

TEST(ApiConvertTest, AnExistingModelIsRefusedAndStillOpens) {
  const std::string out = (ScratchDir() / "twice.warp").string();
  warp_convert_options options = Options(kCheckpoint.string(), out);
  ASSERT_EQ(warp_convert(&options), WARP_OK) << warp_last_error();
  const std::map<std::string, std::string> before = Files(out);
  EXPECT_THAT(before.at("manifest.json"), HasSubstr("o_proj_fold"));  // the default folds
  EXPECT_EQ(warp_convert(&options), WARP_ALREADY_EXISTS);  // was WARP_INTERNAL (issue 44)
  EXPECT_THAT(warp_last_error(), AllOf(HasSubstr(out), HasSubstr("already holds a container")));
  EXPECT_TRUE(Files(out) == before);
  warp_model_options model_options = DemoOptions();
  model_options.path = out.c_str();
  ModelPtr model = OpenModel(model_options);
  EXPECT_NE(model, nullptr);
}

}  // namespace
}  // namespace warp::api
