// computed serve against clients that do not play fair (the probe of issue
// 44): heads without end, bodies past the limit, chunked or not, on routes
// that take none, slow clients holding connections, many connections from one
// address, a request that both chunks and gives a length. A real server
// process, raw sockets; each refusal is checked by its status, and the
// server's memory and its answer to a correct client are checked after.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/serve/test_server.h"
#include "tests/testing/temp_dir.h"

namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::warp::testing::TestServer;
using Clock = std::chrono::steady_clock;

// A raw connection to the server from `source` (any 127/8 address: the
// server counts connections per client address).
class RawClient {
 public:
  RawClient(int port, const char* source = "127.0.0.1") {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in local{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}, .sin_zero = {}};
    ::inet_pton(AF_INET, source, &local.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof(local));
    sockaddr_in server{.sin_family = AF_INET,
                       .sin_port = htons(static_cast<uint16_t>(port)),
                       .sin_addr = {},
                       .sin_zero = {}};
    ::inet_pton(AF_INET, "127.0.0.1", &server.sin_addr);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&server), sizeof(server)) == 0;
  }
  ~RawClient() { ::close(fd_); }

  bool connected() const { return connected_; }
  // False once the server no longer takes bytes (it closed or reset).
  bool Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // What arrives until the server closes, or `timeout` passes.
  std::string ReadAll(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::string out;
    const auto until = Clock::now() + timeout;
    while (Clock::now() < until) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
      if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0))) <= 0) break;
      char chunk[65536];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) break;
      out.append(chunk, static_cast<size_t>(n));
    }
    return out;
  }
  // The first response's status line and head, as soon as it is whole.
  std::string ReadHead(std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
    std::string out;
    const auto until = Clock::now() + timeout;
    while (out.find("\r\n\r\n") == std::string::npos && Clock::now() < until) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char chunk[4096];
      const ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n <= 0) break;
      out.append(chunk, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// The server's resident memory, in MiB.
double ResidentMiB(pid_t pid) {
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      int64_t kib = 0;
      std::string digits;
      for (char c : line) {
        if (c >= '0' && c <= '9') digits += c;
      }
      if (absl::SimpleAtoi(digits, &kib)) return kib / 1024.0;
    }
  }
  return -1;
}

class ServeLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new warp::testing::TempDir();
    auto converted = warp::testing::ConvertDemoModel(dir_->path());
    ASSERT_TRUE(converted.ok()) << converted.status();
    model_ = new std::string(converted->string());
    server_ = new TestServer({*model_, "--context", "64", "--max-connections-per-client", "16",
                              "--head-timeout-seconds", "1"});
    ASSERT_NE(server_->port(), 0) << server_->output();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete model_;
    delete dir_;
  }

  // A correct client is answered, and quickly.
  static void ExpectHealthy(const char* source = "127.0.0.1") {
    const auto start = Clock::now();
    RawClient client(server_->port(), source);
    ASSERT_TRUE(client.Send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    const std::string reply = client.ReadAll(std::chrono::seconds(10));
    EXPECT_THAT(reply, StartsWith("HTTP/1.1 200")) << reply;
    EXPECT_THAT(reply, HasSubstr(R"({"status":"ok"})"));
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2)) << "a correct client waited";
  }

  static inline warp::testing::TempDir* dir_ = nullptr;
  static inline std::string* model_ = nullptr;
  static inline TestServer* server_ = nullptr;
};

TEST_F(ServeLimitsTest, AHeadWithoutEndGets431AndTheMemoryStaysBounded) {
  const double before = ResidentMiB(server_->process().pid());
  // Fields without end: the probe's 1.35 GB took the server to 2.6 GiB.
  RawClient fields(server_->port());
  ASSERT_TRUE(fields.Send("GET /health HTTP/1.1\r\nHost: x\r\n"));
  const std::string field = absl::StrCat("X-Pad: ", std::string(1000, 'a'), "\r\n");
  uint64_t sent = 0;
  while (sent < (uint64_t{256} << 20) && fields.Send(field)) sent += field.size();
  EXPECT_LT(sent, uint64_t{256} << 20) << "the server took 256 MiB of headers";
  EXPECT_THAT(fields.ReadAll(), StartsWith("HTTP/1.1 431"));
  // A request line that never ends.
  RawClient line(server_->port());
  ASSERT_TRUE(line.Send("GET /"));
  sent = 0;
  const std::string path(1 << 16, 'a');
  while (sent < (uint64_t{256} << 20) && line.Send(path)) sent += path.size();
  EXPECT_THAT(line.ReadAll(), StartsWith("HTTP/1.1 431"));
  // Many small fields.
  RawClient many(server_->port());
  std::string head = "GET /health HTTP/1.1\r\n";
  for (int i = 0; i < 101; ++i) absl::StrAppend(&head, "X-", i, ": 1\r\n");
  ASSERT_TRUE(many.Send(head + "\r\n"));
  EXPECT_THAT(many.ReadAll(), StartsWith("HTTP/1.1 431"));
  EXPECT_LT(ResidentMiB(server_->process().pid()) - before, 48);
  ExpectHealthy();
}

TEST_F(ServeLimitsTest, ABodyPastTheLimitGets413BeforeItIsReadOnEveryRoute) {
  for (const char* route : {"/health", "/nowhere", "/v1/chat/completions"}) {
    RawClient client(server_->port());
    ASSERT_TRUE(client.Send(absl::StrCat("POST ", route,
                                         " HTTP/1.1\r\nHost: x\r\nContent-Length: 200000000\r\n\r\n")));
    // Refused on the head alone: not a byte of the body was sent.
    EXPECT_THAT(client.ReadHead(), StartsWith("HTTP/1.1 413")) << route;
  }
  // Chunked: refused once the body passes 16 MiB, not read to its end.
  const double before = ResidentMiB(server_->process().pid());
  RawClient chunked(server_->port());
  ASSERT_TRUE(chunked.Send(
      "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"));
  const std::string chunk = absl::StrCat("100000\r\n", std::string(1 << 20, 'a'), "\r\n");
  uint64_t sent = 0;
  while (sent < (uint64_t{200} << 20) && chunked.Send(chunk)) sent += chunk.size();
  EXPECT_LT(sent, uint64_t{200} << 20) << "the server read 200 MB of chunks";
  EXPECT_THAT(chunked.ReadAll(), StartsWith("HTTP/1.1 413"));
  // At most a 16 MiB body, its buffer doubling as it grows, and the read
  // buffers (the probe's 200 MB held 346 MiB).
  EXPECT_LT(ResidentMiB(server_->process().pid()) - before, 80);
  ExpectHealthy();
}

TEST_F(ServeLimitsTest, AChunkedBodyWithinTheLimitIsServedOnAKeptConnection) {
  RawClient client(server_->port());
  const std::string json = R"({"prompt":"In the beginning","max_tokens":2,"temperature":0})";
  const std::string half = json.substr(0, json.size() / 2), rest = json.substr(json.size() / 2);
  ASSERT_TRUE(client.Send(absl::StrCat(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
      absl::Hex(half.size()), "\r\n", half, "\r\n", absl::Hex(rest.size()), ";ext=1\r\n", rest,
      "\r\n0\r\n\r\n")));
  const std::string first = client.ReadHead();
  EXPECT_THAT(first, StartsWith("HTTP/1.1 200")) << first;
  EXPECT_THAT(first, HasSubstr("Connection: keep-alive"));
  // The same connection serves the next request.
  ASSERT_TRUE(client.Send("GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
  const std::string both = first + client.ReadAll();
  EXPECT_THAT(both, HasSubstr("\"text\"")) << "the completion's body";
  EXPECT_THAT(both, HasSubstr(R"({"status":"ok"})"));
}

TEST_F(ServeLimitsTest, MalformedAndAmbiguousRequestsGet400) {
  for (const std::string& request : {
           std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"),
           std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n"),
           std::string("POST /v1/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
           std::string("GET /health HTTP/1.1\r\nBad Field: x\r\n\r\n"),
           std::string("GET /health HTTP/1.1\r\n folded\r\n\r\n"),
           std::string("POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"),
       }) {
    RawClient client(server_->port());
    ASSERT_TRUE(client.Send(request));
    EXPECT_THAT(client.ReadAll(), StartsWith("HTTP/1.1 400")) << request;
  }
  RawClient version(server_->port());
  ASSERT_TRUE(version.Send("GET /health HTTP/2.0\r\n\r\n"));
  EXPECT_THAT(version.ReadAll(), StartsWith("HTTP/1.1 505"));
  RawClient gzip(server_->port());
  ASSERT_TRUE(gzip.Send("POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"));
  EXPECT_THAT(gzip.ReadAll(), StartsWith("HTTP/1.1 501"));
  ExpectHealthy();
}

TEST_F(ServeLimitsTest, SlowClientsGet408AndNeverHoldOthersUp) {
  // The probe's 150 slow-header clients made /health take 15 s for everyone.
  std::vector<std::unique_ptr<RawClient>> slow;
  for (int i = 0; i < 150; ++i) {
    // From 10 addresses, under the cap of 16 each.
    const std::string source = absl::StrCat("127.0.1.", 1 + i % 10);
    slow.push_back(std::make_unique<RawClient>(server_->port(), source.c_str()));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->Send("GET /health HTTP/1.1\r\nX-Slow: "));
  }
  ExpectHealthy();
  // Each is told, once its head is late (--head-timeout-seconds 1).
  for (auto& client : slow) {
    EXPECT_THAT(client->ReadAll(std::chrono::seconds(10)), StartsWith("HTTP/1.1 408"));
  }
}

TEST_F(ServeLimitsTest, ABodyThatStallsGets408) {
  RawClient client(server_->port());
  ASSERT_TRUE(client.Send("POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"pro"));
  const std::string reply = client.ReadAll(std::chrono::seconds(10));  // --head-timeout-seconds 1
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 408"));
  EXPECT_THAT(reply, HasSubstr("the request body stalled for 1000 ms"));
  ExpectHealthy();
}

TEST_F(ServeLimitsTest, OneAddressHoldsAtMostItsShareOfConnections) {
  std::vector<std::unique_ptr<RawClient>> held;
  for (int i = 0; i < 16; ++i) {
    held.push_back(std::make_unique<RawClient>(server_->port(), "127.0.2.1"));
    ASSERT_TRUE(held.back()->Send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n"));
    EXPECT_THAT(held.back()->ReadHead(), StartsWith("HTTP/1.1 200"));  // kept alive
  }
  RawClient over(server_->port(), "127.0.2.1");
  EXPECT_THAT(over.ReadAll(), StartsWith("HTTP/1.1 503"));
  ExpectHealthy("127.0.2.2");
  held.clear();
  // Once they close, the address is served again.
  for (int attempt = 0; attempt < 50; ++attempt) {
    RawClient again(server_->port(), "127.0.2.1");
    again.Send("GET /health HTTP/1.1\r\nConnection: close\r\n\r\n");
    if (again.ReadAll().starts_with("HTTP/1.1 200")) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "127.0.2.1 was not served after its connections closed";
}

TEST_F(ServeLimitsTest, AWrongKeyIsRefusedAndLogged) {
  TestServer guarded({*model_, "--context", "64", "--api-key", "sesame-open"});
  ASSERT_NE(guarded.port(), 0) << guarded.output();
  RawClient client(guarded.port(), "127.0.3.7");
  ASSERT_TRUE(client.Send(
      "GET /v1/models HTTP/1.1\r\nAuthorization: Bearer guess\r\nX-Warp-Peer: 10.0.0.1\r\n"
      "Connection: close\r\n\r\n"));
  EXPECT_THAT(client.ReadAll(), StartsWith("HTTP/1.1 401"));
  // The log names the connection's address, not the one the client claimed.
  EXPECT_TRUE(guarded.process().WaitForOutput("127.0.3.7: 401 for GET /v1/models",
                                              std::chrono::seconds(10)))
      << guarded.output();
}

}  // namespace
