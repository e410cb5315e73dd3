// computed serve's chat page (/) in headless Chromium, driven by
// tests/serve/chat_page.mjs (playwright-core from tests/npm, Debian's
// chromium from deploy/install-deps.sh): a typed message gets a streamed
// reply, the API's own greedy reply, with its stats line; Stop ends a long
// reply and the server cancels its generation.

#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::warp::testing::TestServer;

constexpr char kChromium[] = "/usr/bin/chromium";

// SCRIPT ARGS (chat_page.mjs, dashboard.mjs): its printed JSON, or a failure
// saying what is missing.
Json Page(const std::vector<std::string>& args, const std::string& script = "chat_page.mjs") {
  if (access(kChromium, X_OK) != 0) {
    ADD_FAILURE() << kChromium
                  << " is missing: install Debian's chromium (deploy/install-deps.sh does)";
    return Json();
  }
  if (auto npm = warp::testing::NodeModulesDir("playwright-core"); !npm.ok()) {
    ADD_FAILURE() << npm.status();
    return Json();
  }
  absl::StatusOr<std::string> out =
      warp::testing::RunNode(warp::testing::SourceDir() / "tests/serve" / script, args);
  if (!out.ok()) {
    ADD_FAILURE() << out.status() << " (" << script << "'s message is on stderr)";
    return Json();
  }
  return Json::parse(*out);
}

// The API's greedy reply to `messages`.
std::string GreedyReply(const TestServer& server, const Json& messages) {
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(60, 0);
  auto response =
      client.Post("/v1/chat/completions", Json({{"messages", messages}, {"temperature", 0}}).dump(),
                  "application/json");
  EXPECT_TRUE(response && response->status == 200) << (response ? response->body : "no response");
  if (!response || response->status != 200) return "";
  return Json::parse(response->body)["choices"][0]["message"]["content"];
}

class ChatPageTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = std::make_unique<warp::testing::TempDir>(); }
  std::unique_ptr<warp::testing::TempDir> dir_;
};

TEST_F(ChatPageTest, ATypedMessageGetsTheApisReplyStreamedWithItsStats) {
  absl::StatusOr<fs::path> model = warp::testing::ConvertDemoModel(dir_->path());
  ASSERT_TRUE(model.ok()) << model.status();
  TestServer server({model->string(), "--context", "256"});
  ASSERT_NE(server.port(), 0) << server.output();

  // Two turns, greedy (the page's temperature field at 0).
  const std::string message = "In the beginning";
  const Json page = Page({"reply", server.url(), message, "0"});
  ASSERT_TRUE(page.is_object());
  EXPECT_THAT(page["problems"], IsEmpty());
  EXPECT_EQ(page["model"], "kjv.warp");
  EXPECT_THAT(page["users"], ElementsAre(message, message));
  EXPECT_EQ(page["input"], "");  // sending cleared it
  ASSERT_EQ(page["replies"].size(), 2u) << page;

  const std::string first = GreedyReply(server, {{{"role", "user"}, {"content", message}}});
  ASSERT_FALSE(first.empty());
  const std::string second = GreedyReply(server, {{{"role", "user"}, {"content", message}},
                                                  {{"role", "assistant"}, {"content", first}},
                                                  {{"role", "user"}, {"content", message}}});
  for (int turn = 0; turn < 2; ++turn) {
    const Json& reply = page["replies"][turn];
    EXPECT_EQ(reply["content"], turn == 0 ? first : second) << "turn " << turn;
    EXPECT_FALSE(reply["error"].get<bool>()) << reply;
    EXPECT_THAT(reply["stats"].get<std::string>(),
                ContainsRegex("^[0-9]+ tokens, [0-9.]+ tok/s decode, [0-9.]+ tok/s prefill \\| "
                              "experts [0-9]+ hit / [0-9]+ miss, [0-9.]+ MiB read"
                              "( \\| cut at the length limit)?$"));
  }
}

TEST_F(ChatPageTest, StopEndsALongReplyAndTheServerCancelsIt) {
  // The tiny Qwen3's greedy replies never end: only Stop ends one.
  absl::StatusOr<fs::path> model = warp::testing::ConvertTinyQwen3(dir_->path());
  ASSERT_TRUE(model.ok()) << model.status();
  TestServer server({model->string(), "--context", "4096"});
  ASSERT_NE(server.port(), 0) << server.output();

  const Json page = Page({"stop", server.url(), "Tell me a long story.", "0"});
  ASSERT_TRUE(page.is_object());
  EXPECT_THAT(page["problems"], IsEmpty());
  // Streamed: the text showed, then grew, while the request was still open.
  EXPECT_GE(page["growth_before_stop"].size(), 3u) << page["growth_before_stop"];
  EXPECT_TRUE(page["stop_was_enabled"].get<bool>());
  EXPECT_FALSE(page["stop_enabled_after"].get<bool>());
  const Json& stopped = page["at_stop"];
  EXPECT_EQ(stopped["stats"], "stopped");
  EXPECT_FALSE(stopped["content"].get<std::string>().empty());
  // Nothing more arrives once stopped.
  EXPECT_EQ(page["after"]["content"], stopped["content"]);

  httplib::Client client("127.0.0.1", server.port());
  std::string metrics;
  for (int i = 0; i < 50 && !absl::StrContains(metrics, "outcome=\"cancelled\"} 1"); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto response = client.Get("/metrics");
    metrics = response ? response->body : "";
  }
  EXPECT_THAT(metrics, ::testing::HasSubstr("warp_requests_total{outcome=\"cancelled\"} 1"));
}

// /dashboard after a request: the figures it shows are /metrics' (read after
// it, with nothing in between) and its heat map's routes /metrics/heat's,
// every chart has a point, it fetched nothing beyond the server, and it
// raised no error.
TEST_F(ChatPageTest, TheDashboardShowsTheMetricsFiguresAndFetchesNothingOutside) {
  absl::StatusOr<std::filesystem::path> model = warp::testing::ConvertDemoModel(dir_->path());
  ASSERT_TRUE(model.ok()) << model.status();
  // --learn: the routes are counted, and the heat map has them.
  TestServer server({model->string(), "--context", "128", "--learn"});
  ASSERT_NE(server.port(), 0) << server.output();
  ASSERT_FALSE(GreedyReply(server, {{{"role", "user"}, {"content", "In the beginning"}}}).empty());

  const Json out = Page({server.url()}, "dashboard.mjs");
  ASSERT_TRUE(out.is_object());
  EXPECT_THAT(out["problems"], IsEmpty());
  for (const Json& url : out["fetched"]) {
    EXPECT_TRUE(absl::StartsWith(url.get<std::string>(), server.url())) << url;
  }
  for (const char* legend : {"tps-legend", "hits-legend", "bytes-legend", "disk-legend",
                             "cache-legend"}) {
    EXPECT_FALSE(out["legends"][legend].get<std::string>().empty()) << legend;
  }
  httplib::Client client("127.0.0.1", server.port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  std::map<std::string, double> samples = warp::testing::PrometheusSamples(metrics->body);
  double read_bytes = 0;
  for (const auto& [name, value] : samples) {
    if (absl::StartsWith(name, "warp_store_read_bytes_total{")) read_bytes += value;
  }
  const Json& figures = out["figures"];
  EXPECT_EQ(figures["requests"], samples["warp_requests_total{outcome=\"ok\"}"]);
  EXPECT_EQ(figures["requests"], 1);
  EXPECT_EQ(figures["completion-tokens"], samples["warp_tokens_total{kind=\"completion\"}"]);
  EXPECT_EQ(figures["prompt-tokens"], samples["warp_tokens_total{kind=\"prompt\"}"]);
  EXPECT_EQ(figures["cache-hits"], samples["warp_expert_records_total{served=\"cache\"}"]);
  EXPECT_EQ(figures["disk-records"], samples["warp_expert_records_total{served=\"disk\"}"]);
  EXPECT_EQ(figures["read-bytes"], read_bytes);
  EXPECT_GT(read_bytes, 0);
  EXPECT_EQ(figures["cache-used"], samples["warp_store_cache_used_bytes"]);
  EXPECT_EQ(figures["cache-capacity"], samples["warp_store_cache_capacity_bytes"]);
  EXPECT_GT(figures["cache-capacity"].get<double>(), 0);
  EXPECT_EQ(figures["ttft-count"], samples["warp_time_to_first_token_seconds_count"]);
  EXPECT_EQ(figures["governor-shrinks"], samples["warp_governor_actions_total{action=\"shrink\"}"]);
  EXPECT_EQ(figures["governor-grows"], samples["warp_governor_actions_total{action=\"grow\"}"]);
  EXPECT_EQ(samples.count("warp_governor_actions_total{action=\"grow\"}"), 1u);

  auto heat = client.Get("/metrics/heat");
  ASSERT_TRUE(heat);
  double routes = 0;
  const Json layers = Json::parse(heat->body)["layers"];
  for (const Json& layer : layers) {
    for (const Json& count : layer["experts"]) routes += count.get<double>();
  }
  EXPECT_FALSE(layers.empty());
  EXPECT_GT(routes, 0);
  EXPECT_EQ(figures["routes"], routes);
}

}  // namespace
