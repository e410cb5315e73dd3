// The computed command line as a user runs it: exit codes and messages.

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::RunBinary;

class ComputedCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result = RunBinary("computed", "synth --quiet --preset tiny " + Model());
    ASSERT_EQ(result.exit_code, 0) << result.output;
    EXPECT_THAT(result.output, HasSubstr("wrote " + Model()));
  }

  std::string Model() const { return (dir_ / "tiny.warp").string(); }

  warp::testing::TempDir dir_;
};

TEST_F(ComputedCliTest, PlanPrintsEveryFigure) {
  auto result = RunBinary("computed", "plan --context 1000 " + Model());
  ASSERT_EQ(result.exit_code, 0) << result.output;
  for (const char* row :
       {"trunk", "kv/state", "working set", "banks", "floor", "recommended", "default"}) {
    EXPECT_THAT(result.output, HasSubstr(row));
  }
  EXPECT_THAT(result.output, HasSubstr("1000 tokens x 640 B"));
}

TEST_F(ComputedCliTest, PlanRefusesABudgetBelowTheFloor) {
  auto result = RunBinary("computed", "plan --budget 1M " + Model());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("computed plan: budget 1.00 MiB is below the floor"));
  EXPECT_THAT(result.output, HasSubstr("needs at least"));
}

TEST_F(ComputedCliTest, PlanAcceptsABudgetAboveTheFloor) {
  auto result = RunBinary("computed", "plan --budget 64M " + Model());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--budget; expert cache"));
}

TEST_F(ComputedCliTest, PlanOfAMissingModelNamesTheFile) {
  auto result = RunBinary("computed", "plan " + (dir_ / "nope.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("nope.warp/manifest.json: No such file or directory"));
}

TEST_F(ComputedCliTest, SynthRejectsAMalformedSize) {
  auto result = RunBinary("computed", "synth --size 12X " + (dir_ / "m.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("invalid size \"12X\""));
}

TEST_F(ComputedCliTest, SynthRejectsAnUnknownFormat) {
  auto result = RunBinary("computed", "synth --experts q3 " + (dir_ / "m.warp").string());
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_THAT(result.output, HasSubstr("--experts: unknown format \"q3\""));
}

TEST_F(ComputedCliTest, SynthHelpListsThePresets) {
  auto result = RunBinary("computed", "synth --help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("deepseek_v3 / k2-slice"));
}

}  // namespace
}  // namespace warp::computed
