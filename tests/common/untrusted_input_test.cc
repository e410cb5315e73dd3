// Inputs that once crashed or hung WARP: JSON nested deep enough to overflow
// the parser's stack, and a FIFO (or any non-regular file) where a file was
// expected, which blocked open() forever. Each is now a clear error naming
// the file.

#include <sys/stat.h>
#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/format/container.h"
#include "common/format/manifest.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonDepthTest, CountsOpenArraysAndObjects) {
  WARP_EXPECT_OK(CheckJsonDepth(Nested(kMaxJsonDepth), "x.json"));
  EXPECT_THAT(CheckJsonDepth(Nested(kMaxJsonDepth + 1), "x.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("x.json: JSON nested deeper than 512 levels"),
                             HasSubstr("at byte 512"))));
  WARP_EXPECT_OK(CheckJsonDepth(R"({"a": [1, {"b": [2]}], "c": {}})", "x.json", 4));
  EXPECT_FALSE(CheckJsonDepth(R"({"a": [1, {"b": [2]}]})", "x.json", 3).ok());
}

TEST(JsonDepthTest, BracketsInStringsDoNotCount) {
  WARP_EXPECT_OK(CheckJsonDepth(R"(["[[[[", "{{{{\"[[[", "\\"])", "x.json", 1));
  EXPECT_FALSE(CheckJsonDepth(R"(["\\", [[]]])", "x.json", 2).ok());  // the string ended
}

class UntrustedFileTest : public ::testing::Test {
 protected:
  void SetUp() override { WARP_ASSERT_OK(warp::testing::WriteTinyContainer(model_)); }
  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
};

TEST_F(UntrustedFileTest, ADeeplyNestedManifestIsRefusedNotACrash) {
  std::string manifest;
  {
    auto text = ReadFileToString(model_ / "manifest.json");
    WARP_ASSERT_OK(text);
    manifest = *text;
  }
  // A million levels in a field nobody reads: this overflowed the stack.
  manifest.insert(manifest.find('{') + 1, "\"x\": " + Nested(1'000'000) + ", ");
  std::ofstream(model_ / "manifest.json") << manifest;
  EXPECT_THAT(Container::Open(model_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("nested deeper than 512"))));
}

// Found by tests/fuzz (manifest_fuzz): a number past a double's range is an
// out_of_range exception in nlohmann, not a parse_error, and ended the process.
TEST(UntrustedJsonTest, ANumberPastADoubleIsRefusedNotACrash) {
  EXPECT_THAT(ParseManifest(R"({"format": "warp", "config": {"rms_norm_eps": 1e400}})", "m.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.json: malformed JSON"), HasSubstr("1e400"))));
}

TEST_F(UntrustedFileTest, AFifoOrADirectoryInPlaceOfAFileIsRefusedNotAHang) {
  fs::remove(model_ / "manifest.json");
  ASSERT_EQ(::mkfifo((model_ / "manifest.json").c_str(), 0600), 0);
  // Without O_NONBLOCK this open would wait for a writer forever.
  EXPECT_THAT(Container::Open(model_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("manifest.json: is a FIFO, not a regular file")));
  EXPECT_THAT(ReadFileToString(model_), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("is a directory, not a regular file")));
  EXPECT_THAT(OpenForRead("/dev/null", /*want_direct=*/false),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a character device")));
}

TEST_F(UntrustedFileTest, ManifestPathsStayInsideTheContainer) {
  auto text = ReadFileToString(model_ / "manifest.json");
  WARP_ASSERT_OK(text);
  auto manifest = nlohmann::json::parse(*text);
  manifest["tokenizer"] = {{"files", {"tokenizer.json"}}, {"chat_template", "../../etc/passwd"}};
  std::ofstream(model_ / "manifest.json") << manifest.dump();
  EXPECT_THAT(Container::Open(model_),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tokenizer.chat_template: file \"../../etc/passwd\" must be a "
                                 "plain file name")));
  manifest["tokenizer"] = {{"files", {"/etc/passwd"}}, {"chat_template", nullptr}};
  std::ofstream(model_ / "manifest.json") << manifest.dump();
  EXPECT_THAT(Container::Open(model_),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokenizer.files[0]")));
}

TEST_F(UntrustedFileTest, ALinkOutOfTheContainerIsRefused) {
  auto container = Container::Open(model_);
  WARP_ASSERT_OK(container);
  std::ofstream(model_ / "inside.jinja") << "{{ x }}";
  fs::create_symlink("inside.jinja", model_ / "alias.jinja");
  fs::create_symlink("/etc/passwd", model_ / "chat_template.jinja");
  WARP_EXPECT_OK((*container)->ContainedFile("inside.jinja"));
  WARP_EXPECT_OK((*container)->ContainedFile("alias.jinja"));
  EXPECT_THAT(
      (*container)->ContainedFile("chat_template.jinja"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("resolves to /etc/passwd"), HasSubstr("outside the container"))));
}

}  // namespace
}  // namespace warp
