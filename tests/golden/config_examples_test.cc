// Every example config in deploy/config/ is one expertd accepts: parsed by its
// own LoadConfig, passed by NormalizeConfig, naming a model and at least one
// address. The systemd unit and the file names agree on where configs live.

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/io/file.h"
#include "expertd/serve.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

using ::warp::testing::SourceDir;

std::vector<fs::path> ExampleConfigs() {
  std::vector<fs::path> configs;
  std::error_code error;
  for (const fs::directory_entry& entry :
       fs::directory_iterator(SourceDir() / "deploy" / "config", error)) {
    if (entry.path().extension() == ".textproto") configs.push_back(entry.path());
  }
  std::sort(configs.begin(), configs.end());
  return configs;
}

// "expertd.nvme0.textproto" -> "expertd_nvme0": a test name.
std::string TestName(const ::testing::TestParamInfo<fs::path>& info) {
  std::string name = info.param.stem().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

class ConfigExampleTest : public ::testing::TestWithParam<fs::path> {};

TEST_P(ConfigExampleTest, ParsesAndNormalizes) {
  absl::StatusOr<v1::ExpertdConfig> config = LoadConfig(GetParam().string());
  WARP_ASSERT_OK(config);
  absl::StatusOr<v1::ExpertdConfig> normalized = NormalizeConfig(*config);
  WARP_ASSERT_OK(normalized);
  EXPECT_FALSE(normalized->model().empty());
  EXPECT_GE(normalized->listen_size(), 1);
}

TEST_P(ConfigExampleTest, NamedForTheSystemdUnit) {
  // expertd@INSTANCE.service reads /etc/warp/expertd.INSTANCE.textproto.
  const std::string name = GetParam().filename().string();
  EXPECT_TRUE(absl::StartsWith(name, "expertd.")) << name;
  EXPECT_TRUE(absl::EndsWith(name, ".textproto")) << name;
}

TEST_P(ConfigExampleTest, LogLevelIsOneSpdlogKnows) {
  absl::StatusOr<v1::ExpertdConfig> config = LoadConfig(GetParam().string());
  WARP_ASSERT_OK(config);
  const std::vector<std::string> levels = {"", "trace", "debug", "info", "warn", "error"};
  EXPECT_THAT(levels, ::testing::Contains(config->log_level()));
}

INSTANTIATE_TEST_SUITE_P(DeployConfig, ConfigExampleTest, ::testing::ValuesIn(ExampleConfigs()),
                         TestName);

TEST(ConfigExamplesTest, DeployHasExamples) {
  EXPECT_GE(ExampleConfigs().size(), 2u) << (SourceDir() / "deploy" / "config");
}

TEST(ConfigExamplesTest, SystemdUnitServesTheInstanceConfig) {
  absl::StatusOr<std::string> unit =
      ReadFileToString(SourceDir() / "deploy" / "systemd" / "expertd@.service");
  WARP_ASSERT_OK(unit);
  EXPECT_THAT(*unit, HasSubstr("ExecStart=/usr/local/bin/expertd serve "
                               "--config=/etc/warp/expertd.%i.textproto\n"));
  EXPECT_THAT(*unit, HasSubstr("KillSignal=SIGTERM\n"));
}

}  // namespace
}  // namespace warp::expertd
