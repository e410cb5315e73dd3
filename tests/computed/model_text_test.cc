// What a container's text layer takes from its config, checked (the probe of
// issue 44): an eos_token_id that is no token id of the model is left out with
// a warning naming it, and text that encodes to a token the model has no row
// for is refused by `computed tokenize`, naming the token.

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::RunBinary;

class ModelTextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto converted = RunBinary("computed", "convert --quiet " +
                                               (warp::testing::SourceDir() /
                                                "tests/demo_model/kjv-moe")
                                                   .string() +
                                               " " + Model());
    ASSERT_EQ(converted.exit_code, 0) << converted.output;
  }
  std::string Model() const { return (dir_ / "k.warp").string(); }
  // Rewrites the manifest's config with `edit` applied.
  template <typename Edit>
  void EditConfig(Edit edit) {
    const fs::path path = dir_ / "k.warp" / "manifest.json";
    json manifest = json::parse(std::ifstream(path));
    edit(manifest["config"]);
    std::ofstream(path) << manifest.dump(2);
  }

  warp::testing::TempDir dir_;
};

TEST_F(ModelTextTest, AnEosTokenIdThatIsNoTokenIsLeftOutNamingIt) {
  EditConfig([](json& config) { config["eos_token_id"] = json::array({"x", 99999999, -1}); });
  auto result = RunBinary("computed", "--log-level warn tokenize --tokenizer " + Model() +
                                          " 'In the beginning'");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  for (const char* value : {"\"x\"", "99999999", "-1"}) {
    EXPECT_THAT(result.output,
                HasSubstr(std::string("eos_token_id ") + value + " is not a token id of the model"))
        << value;
  }
}

TEST_F(ModelTextTest, ATokenPastTheModelsVocabularyIsRefusedNamingIt) {
  auto fine = RunBinary("computed", "tokenize --tokenizer " + Model() + " 'In the beginning'");
  ASSERT_EQ(fine.exit_code, 0) << fine.output;
  EditConfig([](json& config) { config["vocab_size"] = 8; });
  auto result = RunBinary("computed", "tokenize --tokenizer " + Model() + " 'In the beginning'");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, HasSubstr("past the model's vocabulary of 8"));
}

}  // namespace
}  // namespace warp::computed
