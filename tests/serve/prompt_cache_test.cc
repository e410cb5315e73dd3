// The prompt cache on disk through `computed serve` and real clients: a
// prompt served again after a restart loads its prefix from disk (usage says
// so: cached_tokens, cache_read_input_tokens) and replies with the bytes of a
// cold run; an agent's next turn after a restart starts from the last reply's
// entry; corrupt entries are refused with a log line and recomputed.

#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::warp::testing::TestServer;

class PromptCacheTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new warp::testing::TempDir();
    absl::StatusOr<fs::path> model = warp::testing::ConvertTinyQwen3(dir_->path());
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = new std::string(model->string());
  }
  static void TearDownTestSuite() {
    delete model_;
    delete dir_;
  }

  // A server of the tiny Qwen3 whose prompt cache is `cache`.
  std::unique_ptr<TestServer> Serve(const fs::path& cache) {
    auto server = std::make_unique<TestServer>(std::vector<std::string>{
        *model_, "--context", "512", "--prompt-cache-dir", cache.string(), "--parallel", "1"});
    EXPECT_NE(server->port(), 0) << server->output();
    return server;
  }

  static Json Chat(const TestServer& server, const OJson& messages) {
    return warp::testing::RunClientScript(
        "openai_client.mjs", "openai", server, "chat",
        OJson{
            {"model", "qwen3.warp"}, {"messages", messages}, {"max_tokens", 6}, {"temperature", 0}},
        0, "")["completion"];
  }

  static inline warp::testing::TempDir* dir_ = nullptr;
  static inline std::string* model_ = nullptr;
};

const OJson kAsk = {{"role", "user"}, {"content", "Tell me about the weather in Paris in May."}};

TEST_F(PromptCacheTest, APromptAfterARestartLoadsItsPrefixAndRepliesTheSame) {
  warp::testing::TempDir cache;
  Json cold;
  {
    auto server = Serve(cache.path());
    cold = Chat(*server, OJson::array({kAsk}));
  }
  const int prompt = cold["usage"]["prompt_tokens"];
  EXPECT_EQ(cold["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  size_t entries = 0;
  for (const auto& file : fs::directory_iterator(cache.path()))
    entries += file.path().extension() == ".wpc";
  EXPECT_EQ(entries, 2u) << "the prompt's end and the reply's end";

  auto server = Serve(cache.path());  // restarted: nothing in memory
  const Json warm = Chat(*server, OJson::array({kAsk}));
  EXPECT_EQ(warm["choices"][0]["message"], cold["choices"][0]["message"]);
  // All but the last prompt token, whose logits start the reply.
  EXPECT_EQ(warm["usage"]["prompt_tokens_details"]["cached_tokens"], prompt - 1);
  httplib::Client client("127.0.0.1", server->port());
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics) << "no /metrics";
  std::map<std::string, double> samples = warp::testing::PrometheusSamples(metrics->body);
  EXPECT_EQ(samples["warp_prompt_cache_lookups_total{outcome=\"hit\"}"], 1);
  EXPECT_EQ(samples["warp_prompt_cache_hit_tokens_total"], prompt);
  EXPECT_EQ(samples["warp_prompt_cache_entries"], 2);

  // The next turn of the conversation, after another restart: it starts
  // with the last reply's entry, more than the first prompt.
  const OJson next = {
      kAsk,
      {{"role", "assistant"}, {"content", cold["choices"][0]["message"]["content"]}},
      {{"role", "user"}, {"content", "And in June?"}}};
  server = Serve(cache.path());
  const Json turn = Chat(*server, next);
  EXPECT_GE(turn["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), prompt)
      << turn["usage"];
  // Anthropic's usage says the same of its own request.
  const Json message = warp::testing::RunClientScript("anthropic_client.mjs", "@anthropic-ai/sdk",
                                                      *server, "messages",
                                                      OJson{{"model", "qwen3.warp"},
                                                            {"messages", OJson::array({kAsk})},
                                                            {"max_tokens", 6},
                                                            {"temperature", 0}},
                                                      0, "")["message"];
  EXPECT_EQ(message["usage"]["cache_read_input_tokens"], prompt - 1) << message["usage"];
  EXPECT_EQ(message["content"][0]["text"], cold["choices"][0]["message"]["content"]);
}

TEST_F(PromptCacheTest, CorruptEntriesAreRefusedAndRecomputed) {
  warp::testing::TempDir cache;
  Json cold;
  {
    auto server = Serve(cache.path());
    cold = Chat(*server, OJson::array({kAsk}));
  }
  for (const auto& file : fs::directory_iterator(cache.path())) {
    std::fstream entry(file.path(), std::ios::in | std::ios::out | std::ios::binary);
    entry.seekp(static_cast<std::streamoff>(fs::file_size(file.path()) - 10));  // in the state
    entry.put('\x5a');
  }
  auto server = Serve(cache.path());
  const Json again = Chat(*server, OJson::array({kAsk}));
  EXPECT_EQ(again["choices"][0]["message"], cold["choices"][0]["message"]);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // The log line comes through the server's output pipe, read as it comes.
  server->process().WaitForOutputPast("the prefix is recomputed", std::chrono::seconds(10));
  EXPECT_THAT(server->output(), HasSubstr("the prefix is recomputed"));
  EXPECT_THAT(server->output(), HasSubstr("CRC32C"));
}

TEST_F(PromptCacheTest, AnUnusableDirectoryIsRefusedAtStartNamingTheFlag) {
  warp::testing::TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  TestServer server({*model_, "--prompt-cache-dir", (dir.path() / "file" / "cache").string()});
  EXPECT_EQ(server.port(), 0);
  EXPECT_EQ(server.process().Wait(), 1);
  EXPECT_THAT(server.output(), HasSubstr("--prompt-cache-dir"));
}

}  // namespace
