#pragma once

// What the C API tests share: the demo checkpoint (tests/demo_model)
// converted once per process, the handles of warp.h owned by unique_ptrs,
// and the CLI's output for comparisons.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "computed/api/warp.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace warp::api {

struct ModelCloser {
  void operator()(warp_model* model) const { warp_model_close(model); }
};
struct SessionFreer {
  void operator()(warp_session* session) const { warp_session_free(session); }
};
using ModelPtr = std::unique_ptr<warp_model, ModelCloser>;
using SessionPtr = std::unique_ptr<warp_session, SessionFreer>;

// The suite's scratch directory, removed at exit: a static object, not a
// leaked pointer, so that its destructor runs (ctest runs each test in a
// process of its own, and each would otherwise leave a converted model behind).
inline const warp::testing::TempDir& ScratchDir() {
  static const warp::testing::TempDir dir;
  return dir;
}

// The demo model as a .warp container (converted on first use).
inline const std::string& DemoModel() {
  static const std::string path = [] {
    const std::string out = (ScratchDir() / "kjv.warp").string();
    const auto checkpoint = warp::testing::SourceDir() / "tests/demo_model/kjv-moe";
    auto result = warp::testing::RunBinary(
        "computed", "--log-level warn convert --quiet " + checkpoint.string() + " " + out);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    return out;
  }();
  return path;
}

inline warp_model_options DemoOptions() {
  warp_model_options options;
  warp_model_options_init(&options);
  options.path = DemoModel().c_str();
  options.threads = 2;
  return options;
}

inline ModelPtr OpenModel(const warp_model_options& options) {
  warp_model* model = nullptr;
  const warp_status status = warp_model_open(&options, &model);
  EXPECT_EQ(status, WARP_OK) << warp_last_error();
  return ModelPtr(model);
}

inline SessionPtr OpenSession(const warp_model* model) {
  warp_session* session = nullptr;
  const warp_status status = warp_session_create(model, &session);
  EXPECT_EQ(status, WARP_OK) << warp_last_error();
  return SessionPtr(session);
}

inline std::vector<int32_t> Tokenize(const warp_model* model, const std::string& text,
                                     bool add_special_tokens) {
  int32_t* ids = nullptr;
  size_t num_ids = 0;
  EXPECT_EQ(warp_tokenize(model, text.data(), text.size(), add_special_tokens, &ids, &num_ids),
            WARP_OK)
      << warp_last_error();
  std::vector<int32_t> out(ids, ids + num_ids);
  warp_free(ids);
  return out;
}

// A command's printed result: its output before the stats line ("\n[...").
inline std::string Printed(const std::string& output) {
  size_t end = output.rfind("\n[");
  if (end == std::string::npos) end = output.size() - (absl::EndsWith(output, "\n") ? 1 : 0);
  return output.substr(0, end);
}

}  // namespace warp::api
