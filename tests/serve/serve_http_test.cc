// computed serve, end to end: a real server process on a loopback port, the
// demo model, a real HTTP client (cpp-httplib). What it answers must be what
// `computed run` answers for the same prompt, through every path (streamed
// or not, from a cold or a reused KV cache); bad requests get OpenAI errors.

#include <httplib.h>
#include <unistd.h>
#include <sys/socket.h>
#include <openssl/ssl.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/serve/test_server.h"
#include "tests/testing/test_certificates.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::RunBinary;
using ::warp::testing::TestServer;

// A client of `server` with a generous read timeout (a cold prefill under load).
httplib::Client ClientOf(const TestServer& server) {
  httplib::Client client("127.0.0.1", server.port());
  client.set_read_timeout(120, 0);
  return client;
}

// The SSE events of a streamed response: each "data: " payload, in order.
std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  for (absl::string_view event : absl::StrSplit(body, "\n\n", absl::SkipEmpty())) {
    if (absl::ConsumePrefix(&event, "data: ")) out.emplace_back(event);
  }
  return out;
}

class ServeHttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new warp::testing::TempDir();
    auto converted = warp::testing::ConvertDemoModel(dir_->path());
    ASSERT_TRUE(converted.ok()) << converted.status();
    server_ = new TestServer({Model(), "--context", "256", "--keepalive-seconds", "0.2"});
    ASSERT_NE(server_->port(), 0) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  static std::string Model() { return (*dir_ / "kjv.warp").string(); }

  // What `computed run` prints for the prompt, greedy (its stats line cut).
  static std::string RunOutput(const std::string& args) {
    auto result = RunBinary("computed", "--log-level warn run " + Model() + " " + args);
    EXPECT_EQ(result.exit_code, 0) << result.output;
    const size_t end = result.output.rfind("\n[");
    return result.output.substr(0, end);
  }

  static Json Post(const std::string& path, const Json& body, int expect_status = 200) {
    httplib::Client client = ClientOf(*server_);
    auto response = client.Post(path, body.dump(), "application/json");
    EXPECT_TRUE(response) << "no response from " << path;
    if (!response) return Json();
    EXPECT_EQ(response->status, expect_status) << response->body;
    return Json::parse(response->body);
  }

  static inline warp::testing::TempDir* dir_ = nullptr;
  static inline TestServer* server_ = nullptr;
};

const Json kHello = {{{"role", "user"}, {"content", "In the beginning"}}};

// A streamed chat request for kHello of `max_tokens` tokens past end-of-text
// (so no reply ends by itself), its events handed to `receiver`: returning
// false leaves, which cancels the reply.
httplib::Request StreamedChat(int max_tokens, httplib::ContentReceiverWithProgress receiver) {
  httplib::Request request;
  request.method = "POST";
  request.path = "/v1/chat/completions";
  request.body = Json({{"messages", kHello},
                       {"max_tokens", max_tokens},
                       {"ignore_eos", true},
                       {"stream", true}})
                     .dump();
  request.set_header("Content-Type", "application/json");
  request.content_receiver = std::move(receiver);
  return request;
}

TEST_F(ServeHttpTest, HealthModelsAndTheChatPage) {
  httplib::Client client = ClientOf(*server_);
  auto health = client.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  auto models = client.Get("/v1/models");
  ASSERT_TRUE(models);
  const Json list = Json::parse(models->body);
  EXPECT_EQ(list["object"], "list");
  EXPECT_EQ(list["data"][0]["id"], "kjv.warp");
  EXPECT_EQ(list["data"][0]["meta"]["context_length"], 256);
  auto page = client.Get("/");
  ASSERT_TRUE(page);
  EXPECT_THAT(page->get_header_value("Content-Type"), HasSubstr("text/html"));
  EXPECT_THAT(page->body, HasSubstr("/v1/chat/completions"));
}

TEST_F(ServeHttpTest, GreedyChatEqualsComputedRunStreamedOrNotAndFromAReusedKvCache) {
  const std::string expected = RunOutput("'In the beginning' -n 24");
  const Json request = {{"messages", kHello}, {"max_tokens", 24}, {"temperature", 0}};
  const Json first = Post("/v1/chat/completions", request);
  EXPECT_EQ(first["object"], "chat.completion");
  EXPECT_EQ(first["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(first["choices"][0]["message"]["content"], expected);
  // The demo model ends this verse before 24 tokens: an end-of-text id, "stop".
  const int tokens = first["usage"]["completion_tokens"];
  EXPECT_LT(tokens, 24);
  EXPECT_EQ(first["choices"][0]["finish_reason"], "stop");

  // The same prompt again: all but its last token come from the KV cache.
  const Json again = Post("/v1/chat/completions", request);
  EXPECT_EQ(again["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(again["usage"]["prompt_tokens_details"]["cached_tokens"],
            again["usage"]["prompt_tokens"].get<int>() - 1);

  Json streamed = request;
  streamed["stream"] = true;
  streamed["stream_options"] = {{"include_usage", true}};
  httplib::Client client = ClientOf(*server_);
  auto response = client.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_THAT(response->get_header_value("Content-Type"), HasSubstr("text/event-stream"));
  const std::vector<std::string> events = SseData(response->body);
  ASSERT_GE(events.size(), 4u) << response->body;
  EXPECT_EQ(events.back(), "[DONE]");
  std::string text;
  std::string finish;
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    const Json chunk = Json::parse(events[i]);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    const Json& choice = chunk["choices"][0];
    if (i == 0) {
      EXPECT_EQ(choice["delta"]["role"], "assistant");
    }
    if (choice["delta"].contains("content")) text += choice["delta"]["content"].get<std::string>();
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
  }
  EXPECT_EQ(text, expected);
  EXPECT_EQ(finish, "stop");
  const Json usage = Json::parse(events[events.size() - 2]);
  EXPECT_TRUE(usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], tokens);
}

TEST_F(ServeHttpTest, CompletionsContinueARawPromptAsComputedRunRawDoes) {
  const std::string expected = RunOutput("--raw 'And God said' -n 16");
  const Json reply =
      Post("/v1/completions", {{"prompt", "And God said"}, {"max_tokens", 16}, {"temperature", 0}});
  EXPECT_EQ(reply["object"], "text_completion");
  EXPECT_EQ(reply["choices"][0]["text"], expected);

  httplib::Client client = ClientOf(*server_);
  auto response = client.Post(
      "/v1/completions",
      Json({{"prompt", "And God said"}, {"max_tokens", 16}, {"temperature", 0}, {"stream", true}})
          .dump(),
      "application/json");
  ASSERT_TRUE(response);
  std::string text;
  for (const std::string& data : SseData(response->body)) {
    if (data == "[DONE]") continue;
    text += Json::parse(data)["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, expected);
}

TEST_F(ServeHttpTest, AStopStringEndsTheReplyWithoutItself) {
  const Json request = {{"messages", kHello}, {"max_tokens", 24}, {"temperature", 0}};
  const std::string full =
      Post("/v1/chat/completions", request)["choices"][0]["message"]["content"];
  ASSERT_GE(full.size(), 12u);
  // A stop sequence from the middle of the greedy reply.
  const std::string stop = full.substr(full.size() / 2, 3);
  Json stopped = request;
  stopped["stop"] = Json::array({"zzzz-never", stop});
  const Json reply = Post("/v1/chat/completions", stopped);
  EXPECT_EQ(reply["choices"][0]["message"]["content"], full.substr(0, full.find(stop)));
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "stop");
}

TEST_F(ServeHttpTest, IgnoreEosGeneratesEveryTokenAsComputedRunIgnoreEosDoes) {
  const std::string expected = RunOutput("'In the beginning' -n 40 --ignore-eos");
  const Json reply =
      Post("/v1/chat/completions",
           {{"messages", kHello}, {"max_tokens", 40}, {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(reply["choices"][0]["message"]["content"], expected);
  EXPECT_EQ(reply["usage"]["completion_tokens"], 40);
  EXPECT_EQ(reply["choices"][0]["finish_reason"], "length");
}

TEST_F(ServeHttpTest, SeededSamplingRepeats) {
  const Json request = {{"messages", kHello},
                        {"max_tokens", 12},
                        {"temperature", 0.9},
                        {"top_p", 0.95},
                        {"seed", 1234}};
  EXPECT_EQ(Post("/v1/chat/completions", request)["choices"][0]["message"]["content"],
            Post("/v1/chat/completions", request)["choices"][0]["message"]["content"]);
}

// What the Anthropic SDK cannot send (anthropic_client_test has the rest):
// no anthropic-version, a body that is not JSON, an unknown path under
// /v1/messages; each an error in Anthropic's shape. And the stream's bytes:
// each event's name is its data's type.
TEST_F(ServeHttpTest, MessagesErrorsAndEventsAreAnthropicsShape) {
  httplib::Client client = ClientOf(*server_);
  const std::string body =
      Json({{"model", "kjv.warp"}, {"messages", kHello}, {"max_tokens", 4}}).dump();
  auto unversioned = client.Post("/v1/messages", body, "application/json");
  ASSERT_TRUE(unversioned);
  EXPECT_EQ(unversioned->status, 400);
  EXPECT_EQ(Json::parse(unversioned->body),
            Json({{"type", "error"},
                  {"error",
                   {{"type", "invalid_request_error"},
                    {"message", "anthropic-version: header is required"}}}}));
  const httplib::Headers versioned = {{"anthropic-version", "2023-06-01"}};
  auto malformed = client.Post("/v1/messages", versioned, "{\"messages\": [", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_THAT(Json::parse(malformed->body)["error"]["message"].get<std::string>(),
              HasSubstr("not valid JSON"));
  auto unknown = client.Post("/v1/messages/batches", versioned, body, "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(Json::parse(unknown->body)["error"]["type"], "not_found_error");

  Json streamed = Json::parse(body);
  streamed["stream"] = true;
  auto events = client.Post("/v1/messages", versioned, streamed.dump(), "application/json");
  ASSERT_TRUE(events);
  EXPECT_EQ(events->status, 200);
  EXPECT_EQ(events->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> names;
  for (size_t at = 0; (at = events->body.find("event: ", at)) != std::string::npos;) {
    const size_t end = events->body.find('\n', at);
    const std::string name = events->body.substr(at + 7, end - at - 7);
    ASSERT_EQ(events->body.compare(end + 1, 6, "data: "), 0) << events->body;
    const size_t data_end = events->body.find('\n', end + 1);
    EXPECT_EQ(Json::parse(events->body.substr(end + 7, data_end - end - 7))["type"], name);
    names.push_back(name);
    at = data_end;
  }
  ASSERT_GE(names.size(), 6u) << events->body;
  EXPECT_EQ(names[0], "message_start");
  EXPECT_EQ(names[1], "ping");
  EXPECT_EQ(names.back(), "message_stop");
}

TEST_F(ServeHttpTest, BadRequestsGetOpenAiErrorsNamingTheField) {
  httplib::Client client = ClientOf(*server_);
  auto malformed = client.Post("/v1/chat/completions", "{\"messages\": [", "application/json");
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  EXPECT_THAT(Json::parse(malformed->body)["error"]["message"].get<std::string>(),
              HasSubstr("not valid JSON"));

  auto error = [&](const Json& body) { return Post("/v1/chat/completions", body, 400)["error"]; };
  Json role = error({{"messages", {{{"role", "wizard"}, {"content", "hi"}}}}});
  EXPECT_EQ(role["param"], "messages[0].role");
  EXPECT_EQ(role["type"], "invalid_request_error");
  EXPECT_THAT(role["message"].get<std::string>(), HasSubstr("unknown role \"wizard\""));
  EXPECT_EQ(error({{"messages", kHello}, {"max_tokens", 0}})["param"], "max_tokens");
  EXPECT_EQ(error({{"messages", kHello}, {"max_tokens", -5}})["param"], "max_tokens");
  EXPECT_EQ(error({{"messages", kHello}, {"max_tokens", uint64_t{1} << 32}})["message"].get<std::string>(),
              "max_tokens is 4294967296; at most 4294967295 (and the context bounds the reply)");
  EXPECT_THAT(error({{"messages", kHello}, {"max_tokens", UINT64_MAX}})["message"]
                  .get<std::string>(),
              HasSubstr("max_tokens is 18446744073709551615; at most"));
  EXPECT_EQ(error({{"messages", kHello}, {"temperature", 3}})["param"], "temperature");
  EXPECT_EQ(error({{"messages", kHello}, {"n", 2}})["param"], "n");
  EXPECT_EQ(error({{"messages", kHello}, {"reasoning_effort", "extreme"}})["param"],
            "reasoning_effort");
  EXPECT_EQ(error({{"messages", Json::array()}})["param"], "messages");
  EXPECT_EQ(error({{"messages", kHello}, {"tool_choice", "required"}})["param"], "tool_choice");
  EXPECT_EQ(error({{"messages", kHello}, {"response_format", {{"type", "xml"}}}})["param"],
            "response_format");
  Json schema = error({{"messages", kHello},
                       {"response_format",
                        {{"type", "json_schema"},
                         {"json_schema",
                          {{"name", "n"},
                           {"schema", {{"type", "object"}, {"patternProperties", Json::object()}}}}}}}});
  EXPECT_EQ(schema["param"], "response_format");
  EXPECT_EQ(schema["message"], "schema at $: \"patternProperties\" is not supported");
  EXPECT_EQ(error({{"messages", kHello}, {"response_format", {{"type", "json_schema"}}}})["param"],
            "response_format.json_schema");
  Json no_schema = error({{"messages", kHello},
                          {"response_format", {{"type", "json_schema"}, {"json_schema", {{"name", "n"}}}}}});
  EXPECT_EQ(no_schema["param"], "response_format.json_schema.schema");
  EXPECT_EQ(no_schema["message"], "response_format.json_schema.schema must be a JSON schema object");
  EXPECT_EQ(
      error({{"messages", kHello},
             {"tool_choice", {{"type", "function"}, {"function", {{"name", "f"}}}}}})["param"],
      "tool_choice");
  EXPECT_EQ(error({{"messages", kHello}, {"tools", {{{"type", "function"}}}}})["param"],
            "tools[0]");
  EXPECT_EQ(
      error({{"messages", {{{"role", "user"}, {"content", {{{"type", "image_url"}}}}}}}})["param"],
      "messages[0].content[0]");
  EXPECT_EQ(error({{"messages", kHello}, {"stream_options", {{"include_usage", true}}}})["param"],
            "stream_options");
  Json reserved = error({{"messages", kHello}, {"chat_template_kwargs", {{"messages", 1}}}});
  EXPECT_EQ(reserved["param"], "chat_template_kwargs");
  EXPECT_THAT(reserved["message"].get<std::string>(), HasSubstr("may not set \"messages\""));
  // A body past 16 MiB is refused before it is read whole.
  auto huge =
      client.Post("/v1/chat/completions", std::string((16 << 20) + 1, ' '), "application/json");
  ASSERT_TRUE(huge);
  EXPECT_EQ(huge->status, 413);
  EXPECT_THAT(huge->body, HasSubstr("larger than 16777216 bytes"));

  // Past the context (256 positions): the prompt alone, or with max_tokens;
  // past the 512 positions the model was trained on.
  std::string bible;
  for (int i = 0; i < 50; ++i) bible += "and the earth was without form ";
  Json over = error({{"messages", {{{"role", "user"}, {"content", bible}}}}});
  EXPECT_EQ(over["code"], "context_length_exceeded");
  EXPECT_THAT(over["message"].get<std::string>(), HasSubstr("the context holds 256"));
  EXPECT_EQ(error({{"messages", kHello}, {"max_tokens", 1000}})["code"], "context_length_exceeded");
  EXPECT_EQ(Post("/v1/completions", {{"max_tokens", 4}}, 400)["error"]["param"], "prompt");

  auto missing = client.Get("/v1/nothing");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_THAT(missing->body, HasSubstr("no such endpoint"));
}

TEST_F(ServeHttpTest, AClientThatLeavesCancelsItsGeneration) {
  auto metrics = [] {
    auto response = ClientOf(*server_).Get("/metrics");
    EXPECT_TRUE(response);
    return response ? response->body : "";
  };
  // A streamed request abandoned after its first events.
  httplib::Client client = ClientOf(*server_);
  int seen = 0;
  // Past end-of-text: a reply that ended by itself before the client left
  // would not be cancelled (a CI run sampled an end-of-text at the second token).
  httplib::Request request =
      StreamedChat(240, [&](const char*, size_t, uint64_t, uint64_t) { return ++seen < 3; });
  client.send(request);
  // The server notices at its next write and ends the request there.
  for (int i = 0; i < 100 && !absl::StrContains(metrics(), "outcome=\"cancelled\"} 1"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_THAT(metrics(), HasSubstr("warp_requests_total{outcome=\"cancelled\"} 1"));
  // And the engine is free for the next one.
  EXPECT_EQ(Post("/v1/chat/completions",
                 {{"messages", kHello}, {"max_tokens", 2}})["usage"]["completion_tokens"],
            2);
}

TEST_F(ServeHttpTest, MetricsCarryTheEngineAndStoreCounters) {
  Post("/v1/chat/completions", {{"messages", kHello}, {"max_tokens", 3}});
  auto response = ClientOf(*server_).Get("/metrics");
  ASSERT_TRUE(response);
  EXPECT_THAT(response->get_header_value("Content-Type"), HasSubstr("text/plain"));
  const std::string& text = response->body;
  for (const char* family :
       {"# TYPE warp_requests_total counter", "warp_tokens_total{kind=\"completion\"}",
        "warp_expert_records_total{served=\"disk\"}", "warp_seconds_total{phase=\"decode\"}",
        "# TYPE warp_queue_depth gauge", "warp_kv_positions{kind=\"capacity\"} 1024",
        "warp_running_requests{kind=\"capacity\"} 4", "warp_engine_steps_total{kind=\"steps\"}",
        "warp_expert_union_bytes_total{kind=\"sequences_alone\"}",
        "warp_store_read_bytes_total{priority=\"demand\"}", "warp_store_cache_hits_total"}) {
    EXPECT_THAT(text, HasSubstr(family));
  }
  // Every sample line is NAME{LABELS} VALUE with a number.
  EXPECT_FALSE(warp::testing::PrometheusSamples(text).empty());
}

// The latency histograms, on a server of its own (known counts): each
// request adds one observation, buckets are cumulative, and the sums are
// the replies' own figures (queue + prefill; decode per token after the first).
TEST_F(ServeHttpTest, LatencyHistogramsCountEachRequestWithItsOwnFigures) {
  TestServer fresh({Model(), "--context", "64"});
  ASSERT_NE(fresh.port(), 0) << fresh.output();
  httplib::Client client = ClientOf(fresh);
  double first_token = 0, per_token = 0, queue = 0;
  for (int i = 0; i < 2; ++i) {
    auto reply = client.Post(
        "/v1/chat/completions",
        Json({{"messages", kHello}, {"max_tokens", 4}, {"ignore_eos", true}}).dump(),
        "application/json");
    ASSERT_TRUE(reply && reply->status == 200);
    const Json warp = Json::parse(reply->body)["warp"];
    first_token += warp["queue_seconds"].get<double>() + warp["prefill_seconds"].get<double>();
    per_token += warp["decode_seconds"].get<double>() / 3;
    queue += warp["queue_seconds"].get<double>();
  }
  auto response = client.Get("/metrics");
  ASSERT_TRUE(response);
  std::map<std::string, double> samples = warp::testing::PrometheusSamples(response->body);
  for (const auto& [name, sum] : {std::pair{"warp_time_to_first_token_seconds", first_token},
                                  std::pair{"warp_time_per_output_token_seconds", per_token},
                                  std::pair{"warp_queue_wait_seconds", queue}}) {
    const std::string family(name);
    EXPECT_THAT(response->body, HasSubstr("# TYPE " + family + " histogram"));
    EXPECT_EQ(samples[family + "_count"], 2) << family;
    EXPECT_EQ(samples[family + "_bucket{le=\"+Inf\"}"], 2) << family;
    EXPECT_NEAR(samples[family + "_sum"], sum, 1e-6 + sum * 1e-6) << family;
    double previous = 0;
    for (const char* le : {"0.005", "0.01", "0.1", "1", "10", "600"}) {
      const double count = samples[absl::StrCat(family, "_bucket{le=\"", le, "\"}")];
      EXPECT_GE(count, previous) << family << " le=" << le;
      previous = count;
    }
    EXPECT_EQ(previous, 2) << family << ": every request within 600 s";
  }
}

// HTTPS (--ssl-cert-file, --ssl-key-file): the same API through cpp-httplib's
// OpenSSL client, which checks the certificate against the test CA; a client
// trusting another CA, or speaking plain HTTP, gets nothing; bad flags are
// refused at start, naming the flag and file.
TEST_F(ServeHttpTest, HttpsServesTheSameApiAndRefusesWhatIsNotTls) {
  warp::testing::TempDir dir;
  absl::StatusOr<warp::testing::TestCertificates> certs =
      warp::testing::MakeTestCertificates(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  TestServer https({Model(), "--context", "256", "--ssl-cert-file", certs->server_cert,
                    "--ssl-key-file", certs->server_key});
  ASSERT_NE(https.port(), 0) << https.output();
  httplib::SSLClient client("127.0.0.1", https.port());
  client.set_ca_cert_path(certs->ca.c_str());
  client.enable_server_certificate_verification(true);
  client.set_read_timeout(120, 0);
  auto health = client.Get("/health");
  ASSERT_TRUE(health) << httplib::to_string(health.error());
  EXPECT_EQ(health->status, 200);
  const Json request = {{"messages", kHello}, {"max_tokens", 3}, {"ignore_eos", true}};
  auto reply = client.Post("/v1/chat/completions", request.dump(), "application/json");
  ASSERT_TRUE(reply);
  EXPECT_EQ(Json::parse(reply->body)["usage"]["completion_tokens"], 3);
  Json streamed = request;
  streamed["stream"] = true;
  auto events = client.Post("/v1/chat/completions", streamed.dump(), "application/json");
  ASSERT_TRUE(events);
  EXPECT_THAT(events->body, HasSubstr("data: [DONE]"));

  // A TLS client that leaves mid-stream, closing its socket with the reply
  // unread (a reset): the pump's next writes fail (EPIPE, never SIGPIPE for
  // the process) and the server answers the next client.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{.sin_family = AF_INET, .sin_port = htons(https.port())};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
    SSL_CTX* context = SSL_CTX_new(TLS_client_method());
    SSL* ssl = SSL_new(context);
    SSL_set_fd(ssl, fd);
    ASSERT_EQ(SSL_connect(ssl), 1);
    Json long_reply = streamed;
    long_reply["max_tokens"] = 200;
    const std::string body = long_reply.dump();
    const std::string head = absl::StrCat(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        "Content-Length: ", body.size(), "\r\n\r\n", body);
    ASSERT_GT(SSL_write(ssl, head.data(), static_cast<int>(head.size())), 0);
    char first[64];
    ASSERT_GT(SSL_read(ssl, first, sizeof(first)), 0);
    ::close(fd);  // the rest of the reply unread: a reset
    SSL_free(ssl);
    SSL_CTX_free(context);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_TRUE(client.Get("/health")) << https.output();
  }

  httplib::SSLClient stranger("127.0.0.1", https.port());
  stranger.set_ca_cert_path(certs->other_ca.c_str());
  stranger.enable_server_certificate_verification(true);
  EXPECT_FALSE(stranger.Get("/health"));
  httplib::Client plain("127.0.0.1", https.port());
  plain.set_read_timeout(5, 0);
  auto refused = plain.Get("/health");
  EXPECT_TRUE(!refused || refused->status != 200);
  // The server is still there for a proper client.
  EXPECT_TRUE(client.Get("/health"));

  auto alone = RunBinary("computed", "serve " + Model() + " --ssl-cert-file " + certs->server_cert);
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_THAT(alone.output, HasSubstr("--ssl-cert-file and --ssl-key-file go together"));
  auto no_cert = RunBinary("computed", "serve " + Model() +
                                          " --listen 127.0.0.1:0 --ssl-cert-file /nonexistent.pem "
                                          "--ssl-key-file " + certs->server_key);
  EXPECT_NE(no_cert.exit_code, 0);
  EXPECT_THAT(no_cert.output,
              HasSubstr("--ssl-cert-file /nonexistent.pem: not a readable PEM certificate chain"));
  auto missing = RunBinary("computed", "serve " + Model() + " --listen 127.0.0.1:0 --ssl-cert-file " +
                                           certs->server_cert + " --ssl-key-file /nonexistent.key");
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_THAT(missing.output, HasSubstr("--ssl-key-file /nonexistent.key: not a readable PEM private key"));
  auto mismatched = RunBinary("computed", "serve " + Model() + " --listen 127.0.0.1:0 --ssl-cert-file " +
                                              certs->client_cert + " --ssl-key-file " +
                                              certs->server_key);
  EXPECT_NE(mismatched.exit_code, 0);
  EXPECT_THAT(mismatched.output, HasSubstr("is not the key of --ssl-cert-file"));
}

TEST_F(ServeHttpTest, AnApiKeyGuardsTheApiButNotTheHealthCheck) {
  TestServer guarded({Model(), "--context", "64", "--api-key", "sesame-open"});
  ASSERT_NE(guarded.port(), 0) << guarded.output();
  httplib::Client client = ClientOf(guarded);
  const std::string body =
      Json({{"messages", kHello}, {"max_tokens", 2}, {"temperature", 0}}).dump();
  auto none = client.Post("/v1/chat/completions", body, "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_EQ(Json::parse(none->body)["error"]["code"], "invalid_api_key");
  auto wrong = client.Post("/v1/chat/completions", {{"Authorization", "Bearer nope"}}, body,
                           "application/json");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(client.Get("/metrics")->status, 401);
  EXPECT_EQ(client.Get("/health")->status, 200);
  auto right = client.Post("/v1/chat/completions", {{"Authorization", "Bearer sesame-open"}}, body,
                           "application/json");
  ASSERT_TRUE(right);
  EXPECT_EQ(right->status, 200) << right->body;
}

TEST_F(ServeHttpTest, ReasoningEffortAndTemplateKwargsReachTheTemplate) {
  const fs::path probe = dir_->path() / "probe.jinja";
  std::ofstream(probe)
      << "{% if reasoning_effort == 'high' %}think long and hard {% endif %}"
         "{{ mood | default('') }}{% for m in messages %} {{ m.content }}{% endfor %}";
  TestServer server({Model(), "--context", "64", "--chat-template", probe.string()});
  ASSERT_NE(server.port(), 0) << server.output();
  httplib::Client client = ClientOf(server);
  auto prompt_tokens = [&](const Json& extra) {
    Json body = {{"messages", kHello}, {"max_tokens", 1}};
    body.update(extra);
    auto response = client.Post("/v1/chat/completions", body.dump(), "application/json");
    EXPECT_TRUE(response && response->status == 200) << (response ? response->body : "");
    return response ? Json::parse(response->body)["usage"]["prompt_tokens"].get<int>() : 0;
  };
  const int plain = prompt_tokens(Json::object());
  EXPECT_GT(prompt_tokens({{"reasoning_effort", "high"}}), plain);
  EXPECT_EQ(prompt_tokens({{"reasoning_effort", "low"}}), plain);
  EXPECT_GT(prompt_tokens({{"chat_template_kwargs", {{"mood", "glad and merry"}}}}), plain);
}

// SIGTERM while a long reply streams: the engine cancels it before its next
// token, so the server ends at once instead of after 4,000 tokens.
TEST_F(ServeHttpTest, SigtermCancelsTheRunningReplyAndExits) {
  TestServer server({Model(), "--context", "4096"});
  ASSERT_NE(server.port(), 0) << server.output();
  httplib::Client client = ClientOf(server);
  std::string body;
  bool signalled = false;
  httplib::Request request =
      StreamedChat(4000, [&](const char* data, size_t size, uint64_t, uint64_t) {
        body.append(data, size);
        if (!signalled && absl::StrContains(body, "\"content\"")) {
          server.process().Signal(SIGTERM);
          signalled = true;
        }
        return true;
      });
  client.send(request);
  ASSERT_TRUE(signalled) << body;
  EXPECT_EQ(server.process().Wait(), 0) << server.output();
  EXPECT_THAT(body, Not(HasSubstr("\"finish_reason\":\"length\""))) << "it ran to the end";
}

TEST_F(ServeHttpTest, RefusesABadListenAddressNamingIt) {
  auto result =
      RunBinary("computed", "--log-level warn serve " + Model() + " --listen nonsense", 30);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--listen nonsense: expected HOST:PORT"));
  auto taken = RunBinary("computed",
                         "--log-level warn serve " + Model() +
                             " --listen 127.0.0.1:" + std::to_string(server_->port()),
                         60);
  EXPECT_NE(taken.exit_code, 0);
  EXPECT_THAT(taken.output, HasSubstr("cannot listen there"));
}

TEST_F(ServeHttpTest, RefusesBadFlagsNamingThem) {
  const fs::path empty = dir_->path() / "empty-key";
  std::ofstream(empty) << "  \n";
  for (const auto& [flags, message] : std::vector<std::pair<std::string, std::string>>{
           {"--listen '[::1:8080'", "--listen [::1:8080: unclosed '['"},
           {"--api-key-file /nonexistent/key", "--api-key-file /nonexistent/key: cannot be read"},
           {"--api-key-file " + empty.string(), ": is empty"},
           {"--api-key-file " + dir_->path().string(), ": is a directory, not a key file"},
           {"--api-key ''", "--api-key '': an empty key would turn authentication off"},
           {"--api-key abc", "--api-key: the key has 3 characters; at least 8 are required"},
           {"--listen 0.0.0.0:0", "serving beyond loopback needs --api-key"},
           {"--max-connections-per-client 0", "--max-connections-per-client must be at least 1"},
           {"--head-timeout-seconds 0", "--head-timeout-seconds must be in [0.1, 3600]"},
           {"--keepalive-seconds 0", "--keepalive-seconds must be in [0.1, 3600]"},
           {"--max-queue 0", "--max-queue must be in [1, 4096]"},
           {"--parallel 65", "--parallel must be in [1, 64]"}}) {
    auto result = RunBinary("computed", "--log-level warn serve " + Model() + " " + flags, 30);
    EXPECT_NE(result.exit_code, 0) << flags;
    EXPECT_THAT(result.output, HasSubstr(message)) << flags;
  }
}

// A container without a chat template (the demo model's, its manifest
// naming none): chat requests are refused naming what to do; raw
// completions still run.
TEST_F(ServeHttpTest, AModelWithoutAChatTemplateRefusesChatButCompletes) {
  const fs::path plain = dir_->path() / "plain.warp";
  fs::create_directory(plain);
  for (const fs::directory_entry& entry : fs::directory_iterator(Model())) {
    if (entry.path().filename() == "chat_template.jinja") continue;
    fs::create_hard_link(entry.path(), plain / entry.path().filename());
  }
  fs::remove(plain / "manifest.json");
  Json manifest = Json::parse(std::ifstream(fs::path(Model()) / "manifest.json"));
  manifest["tokenizer"].erase("chat_template");
  std::ofstream(plain / "manifest.json") << manifest.dump();
  TestServer server({plain.string(), "--context", "256"});
  ASSERT_NE(server.port(), 0) << server.output();
  httplib::Client client = ClientOf(server);
  auto chat =
      client.Post("/v1/chat/completions", Json({{"messages", kHello}}).dump(), "application/json");
  ASSERT_TRUE(chat);
  EXPECT_EQ(chat->status, 400);
  const Json error = Json::parse(chat->body)["error"];
  EXPECT_EQ(error["param"], "messages");
  EXPECT_THAT(error["message"].get<std::string>(),
              HasSubstr("the model has no chat template (serve it with --chat-template FILE"));
  auto raw = client.Post("/v1/completions",
                         Json({{"prompt", "In the beginning"}, {"max_tokens", 3}}).dump(),
                         "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 200) << raw->body;
}

// A long StreamedChat on `server` in a thread of its own, whose client stays
// until `release`; `running` once its first bytes arrived.
std::thread LongStream(const TestServer& server, std::atomic<bool>& running,
                       const std::atomic<bool>& release) {
  return std::thread([&server, &running, &release] {
    httplib::Client client = ClientOf(server);
    httplib::Request request = StreamedChat(4000, [&](const char*, size_t, uint64_t, uint64_t) {
      running = true;
      return !release.load();
    });
    client.send(request);
  });
}

// With --parallel 2 --max-queue 1: two requests run, one waits, the next is
// refused (503) rather than queued without bound.
TEST_F(ServeHttpTest, AFullQueueRefusesWithServiceUnavailable) {
  TestServer server({Model(), "--context", "4096", "--parallel", "2", "--max-queue", "1"});
  ASSERT_NE(server.port(), 0) << server.output();
  std::atomic<bool> running[2] = {false, false}, release{false};
  std::thread first = LongStream(server, running[0], release);
  std::thread second = LongStream(server, running[1], release);
  while (!running[0] || !running[1]) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string small = Json({{"messages", kHello}, {"max_tokens", 2}}).dump();
  int queued_status = 0;
  std::thread queued([&] {
    auto response = ClientOf(server).Post("/v1/chat/completions", small, "application/json");
    queued_status = response ? response->status : -1;
  });
  auto metrics = [&] {
    auto response = ClientOf(server).Get("/metrics");
    return response ? response->body : "";
  };
  for (int i = 0; i < 200 && !absl::StrContains(metrics(), "warp_queue_depth 1"); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(absl::StrContains(metrics(), "warp_running_requests{kind=\"running\"} 2"));
  auto refused = ClientOf(server).Post("/v1/chat/completions", small, "application/json");
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_THAT(refused->body, HasSubstr("requests are waiting (--max-queue)"));
  release = true;
  first.join();
  second.join();
  queued.join();
  EXPECT_EQ(queued_status, 200);  // the waiting one ran once the others were cancelled
}

// --parallel: requests that arrive together run in one batched pass per
// step — prompts in chunks of 3 beside the others' decode tokens — sharing
// expert reads (the metrics show steps of several requests and fewer bytes
// than each alone would read), and each reply is byte for byte the reply it
// gets alone, greedy or seeded.
TEST_F(ServeHttpTest, ConcurrentRequestsDecodeTogetherAndEachGetsItsReplyAlone) {
  TestServer server({Model(), "--context", "512", "--parallel", "3", "--prefill-chunk", "3"});
  ASSERT_NE(server.port(), 0) << server.output();
  const std::vector<Json> requests = {
      {{"messages", kHello}, {"max_tokens", 40}, {"ignore_eos", true}, {"temperature", 0}},
      {{"messages", {{{"role", "user"}, {"content", "And God said"}}}},
       {"max_tokens", 32},
       {"ignore_eos", true},
       {"temperature", 0.9},
       {"seed", 7}},
      {{"prompt", "Blessed are the"},
       {"max_tokens", 36},
       {"ignore_eos", true},
       {"temperature", 0.7},
       {"top_p", 0.9},
       {"seed", 11}}};
  auto post = [&](const Json& body) {
    const std::string path = body.contains("prompt") ? "/v1/completions" : "/v1/chat/completions";
    auto response = ClientOf(server).Post(path, body.dump(), "application/json");
    EXPECT_TRUE(response && response->status == 200) << (response ? response->body : "none");
    return response ? Json::parse(response->body) : Json();
  };
  auto text = [](const Json& reply) {
    const Json& choice = reply["choices"][0];
    return choice.contains("text") ? choice["text"].get<std::string>()
                                   : choice["message"]["content"].get<std::string>();
  };
  std::vector<std::string> alone;
  for (const Json& body : requests) alone.push_back(text(post(body)));
  // Twice together: the second round finds its prompts in the KV caches.
  for (int round = 0; round < 2; ++round) {
    std::vector<Json> together(requests.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < requests.size(); ++i) {
      clients.emplace_back([&, i] { together[i] = post(requests[i]); });
    }
    for (std::thread& client : clients) client.join();
    uint32_t most = 0;
    for (size_t i = 0; i < requests.size(); ++i) {
      EXPECT_EQ(text(together[i]), alone[i]) << "request " << i << ", round " << round;
      most = std::max(most, together[i]["warp"]["max_batch"].get<uint32_t>());
    }
    EXPECT_GE(most, 2u) << "no decode step served two requests";
  }
  auto metrics = ClientOf(server).Get("/metrics");
  ASSERT_TRUE(metrics);
  auto sample = [&](const std::string& name) {
    const size_t at = metrics->body.find(name + " ");
    double value = -1;
    if (at != std::string::npos) {
      const size_t begin = at + name.size() + 1;
      EXPECT_TRUE(absl::SimpleAtod(
          metrics->body.substr(begin, metrics->body.find('\n', begin) - begin), &value));
    }
    return value;
  };
  EXPECT_GT(sample("warp_engine_steps_total{kind=\"requests\"}"),
            sample("warp_engine_steps_total{kind=\"steps\"}"));
  EXPECT_GT(sample("warp_expert_union_bytes_total{kind=\"sequences_alone\"}"),
            sample("warp_expert_union_bytes_total{kind=\"batched\"}"));
}

}  // namespace
