// expertd on a LAN: TCP needs TLS and a token. Real daemons on loopback with
// throwaway certificates: the right token reads the same bytes as the bank
// file; a wrong token, no token, an expired certificate, a wrong CA, a plain
// client and a client without the certificate mutual TLS asks for are all
// refused at once, naming the address; and a daemon refuses to start with
// TCP open in the clear.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/client/grpc_source.h"
#include "common/io/file.h"
#include "common/wire/lan_auth.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/testing/daemon.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_certificates.h"
#include "tests/testing/tiny_container.h"
#include "warp/v1/expert_service.grpc.pb.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using ::warp::testing::CommandResult;
using ::warp::testing::Daemon;
using ::warp::testing::StatusIs;

// A refusal must come from the handshake or the token, not from waiting out
// the 5 s connect timeout.
constexpr auto kAtOnce = std::chrono::seconds(2);

// A token file as an operator would write it: only its owner may read it.
void WriteSecret(const fs::path& path, const std::string& text) {
  std::ofstream(path) << text;
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write);
}

class LanSecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = warp::testing::WriteTinyContainer(model_);
    WARP_ASSERT_OK(manifest);
    manifest_ = *manifest;
    auto certificates = warp::testing::MakeTestCertificates(dir_.path());
    WARP_ASSERT_OK(certificates);
    certs_ = *certificates;
  }

  // A daemon serving TLS on a free loopback port, with `extra` flags.
  std::unique_ptr<Daemon> StartTlsDaemon(const std::string& cert,
                                         const std::vector<std::string>& extra = {},
                                         const std::string& token_file = "") {
    std::vector<std::string> args = {
        "--model",      model_.string(),
        "--listen",     "tcp:127.0.0.1:0",
        "--tls-cert",   cert,
        "--tls-key",    certs_.server_key,
        "--token-file", token_file.empty() ? certs_.token : token_file};
    args.insert(args.end(), extra.begin(), extra.end());
    auto daemon = Daemon::Start(args);
    EXPECT_TRUE(daemon.ok()) << daemon.status();
    return daemon.ok() ? std::move(*daemon) : nullptr;
  }

  // "tls:127.0.0.1:PORT" of a daemon that printed "tcp:127.0.0.1:PORT".
  static std::string TlsAddress(const Daemon& daemon) {
    return "tls:" + daemon.addresses().at(0).substr(4);
  }

  // Connect, timed: the status and whether it came at once.
  absl::StatusOr<std::unique_ptr<GrpcExpertSource>> TimedConnect(const std::string& address,
                                                                 const TlsClientFiles& tls,
                                                                 bool& at_once) {
    const auto start = std::chrono::steady_clock::now();
    auto client = GrpcExpertSource::Connect(
        {.address = address, .tls = tls, .retry_deadline = std::chrono::seconds(5)});
    at_once = std::chrono::steady_clock::now() - start < kAtOnce;
    return client;
  }

  TlsClientFiles RightFiles() const { return {.ca = certs_.ca, .token_file = certs_.token}; }

  std::string BankRecord(uint32_t layer, uint32_t expert) {
    auto bytes = ReadFileToString(model_ / absl::StrCat("experts-L", layer, ".bin"));
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    const uint64_t record = manifest_.banks[0].record_bytes;
    return bytes.ok() ? bytes->substr(expert * record, record) : std::string();
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
  Manifest manifest_;
  warp::testing::TestCertificates certs_;
};

TEST_F(LanSecurityTest, TheRightTokenReadsTheBankBytes) {
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert);
  ASSERT_NE(daemon, nullptr);
  auto client = GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = RightFiles()});
  WARP_ASSERT_OK(client);
  const std::vector<ExpertKey> keys = {{1, 0}, {2, 3}};
  std::vector<absl::StatusOr<ExpertRecord>> records = (*client)->ReadAll(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    WARP_ASSERT_OK(records[i]);
    const std::span<const std::byte> bytes = records[i]->bytes();
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()),
              BankRecord(keys[i].layer, keys[i].expert));
  }
}

TEST_F(LanSecurityTest, AFailedRecordNamesItsExpertButNotTheDaemonsDirectories) {
  WARP_ASSERT_OK(warp::testing::FlipBankByte(model_, 1, 100));
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert);
  ASSERT_NE(daemon, nullptr);
  auto client = GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = RightFiles()});
  WARP_ASSERT_OK(client);
  const std::vector<ExpertKey> keys = {{1, 0}};
  std::vector<absl::StatusOr<ExpertRecord>> records = (*client)->ReadAll(keys);
  EXPECT_THAT(records.at(0),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("expert 0 of layer 1: checksum mismatch"),
                             HasSubstr("experts-L1.bin"), Not(HasSubstr(dir_.path().string())))));
}

TEST_F(LanSecurityTest, AWrongTokenIsRefusedAtOnceNamingTheAddress) {
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert);
  ASSERT_NE(daemon, nullptr);
  bool at_once = false;
  auto client = TimedConnect(TlsAddress(*daemon),
                             {.ca = certs_.ca, .token_file = certs_.other_token}, at_once);
  EXPECT_THAT(client, StatusIs(absl::StatusCode::kUnauthenticated,
                               AllOf(HasSubstr("expertd at " + TlsAddress(*daemon)),
                                     HasSubstr("wrong token"), HasSubstr("--token-file"))));
  EXPECT_TRUE(at_once);
}

TEST_F(LanSecurityTest, NoTokenIsRefusedByTheDaemon) {
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert);
  ASSERT_NE(daemon, nullptr);
  // Our client never leaves the token out (it refuses to start without one),
  // so a bare gRPC client over TLS stands for a foreign one.
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = *ReadFileToString(certs_.ca);
  auto channel =
      grpc::CreateChannel(daemon->addresses().at(0).substr(4), grpc::SslCredentials(ssl));
  auto stub = v1::ExpertStore::NewStub(channel);
  for (const bool read : {false, true}) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    grpc::Status status;
    if (read) {
      v1::ReadRequest request;
      v1::ExpertKey* key = request.add_keys();
      key->set_layer(1);
      key->set_expert(0);
      auto reader = stub->Read(&context, request);
      v1::ReadChunk chunk;
      EXPECT_FALSE(reader->Read(&chunk)) << "a record was sent without a token";
      status = reader->Finish();
    } else {
      v1::DescribeReply reply;
      status = stub->Describe(&context, v1::DescribeRequest(), &reply);
    }
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("no token"));
  }
  EXPECT_THAT(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = {.ca = certs_.ca}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--token-file")));
}

TEST_F(LanSecurityTest, ACertificateOfAnotherCaIsRefusedAtOnce) {
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert);
  ASSERT_NE(daemon, nullptr);
  bool at_once = false;
  auto client = TimedConnect(TlsAddress(*daemon),
                             {.ca = certs_.other_ca, .token_file = certs_.token}, at_once);
  EXPECT_THAT(client, StatusIs(absl::StatusCode::kUnavailable,
                               HasSubstr("expertd at " + TlsAddress(*daemon))));
  EXPECT_TRUE(at_once);
}

TEST_F(LanSecurityTest, APlainClientOfATlsDaemonIsRefusedAtOnce) {
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert);
  ASSERT_NE(daemon, nullptr);
  bool at_once = false;
  auto client = TimedConnect(daemon->addresses().at(0), {}, at_once);
  EXPECT_THAT(client, StatusIs(absl::StatusCode::kUnavailable,
                               AllOf(HasSubstr("expertd at " + daemon->addresses().at(0)),
                                     HasSubstr("tls:HOST:PORT"))));
  EXPECT_TRUE(at_once);
}

TEST_F(LanSecurityTest, MutualTlsNeedsTheClientsCertificate) {
  std::unique_ptr<Daemon> daemon =
      StartTlsDaemon(certs_.server_cert, {"--tls-client-ca", certs_.ca});
  ASSERT_NE(daemon, nullptr);
  bool at_once = false;
  EXPECT_THAT(TimedConnect(TlsAddress(*daemon), RightFiles(), at_once),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("expertd at ")));
  EXPECT_TRUE(at_once);
  TlsClientFiles with_cert = RightFiles();
  with_cert.cert = certs_.client_cert;
  with_cert.key = certs_.client_key;
  WARP_EXPECT_OK(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = with_cert}));
}

TEST_F(LanSecurityTest, ARotatedTokenFileIsReadAgain) {
  const fs::path tokens = dir_ / "tokens";
  fs::copy_file(certs_.token, tokens);
  std::unique_ptr<Daemon> daemon = StartTlsDaemon(certs_.server_cert, {}, tokens.string());
  ASSERT_NE(daemon, nullptr);
  const TlsClientFiles old_token = RightFiles();
  const TlsClientFiles new_token = {.ca = certs_.ca, .token_file = certs_.other_token};
  WARP_EXPECT_OK(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = old_token}));
  EXPECT_THAT(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = new_token}),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("wrong token")));
  // Rotation: both tokens for a while, then the new one alone.
  std::ofstream(tokens) << "# rotating\n"
                        << *ReadFileToString(certs_.token) << *ReadFileToString(certs_.other_token);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the daemon's recheck interval
  WARP_EXPECT_OK(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = old_token}));
  WARP_EXPECT_OK(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = new_token}));
  std::ofstream(tokens) << *ReadFileToString(certs_.other_token);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_THAT(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = old_token}),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("wrong token")));
  WARP_EXPECT_OK(GrpcExpertSource::Connect({.address = TlsAddress(*daemon), .tls = new_token}));
}

// --- Refusals at start ------------------------------------------------------------

class LanStartTest : public LanSecurityTest {
 protected:
  CommandResult Serve(const std::string& args) {
    return warp::testing::RunBinary("expertd",
                                    absl::StrCat("serve --model ", model_.string(), " ", args), 10);
  }
};

TEST_F(LanStartTest, PlainTcpIsRefusedSayingWhatToAdd) {
  CommandResult result = Serve("--listen tcp:127.0.0.1:0");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output,
              AllOf(HasSubstr("--listen tcp:127.0.0.1:0: TCP needs TLS and a token"),
                    HasSubstr("--tls-cert"), HasSubstr("--token-file"), HasSubstr("--insecure")));
  result = Serve("--listen tcp:0.0.0.0:0");
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output,
              AllOf(HasSubstr("TCP needs TLS and a token"), Not(HasSubstr("--insecure"))));
}

TEST_F(LanStartTest, InsecureIsForLoopbackOnly) {
  for (const std::string host : {"0.0.0.0", "10.0.0.21", "[::]"}) {
    const CommandResult result = Serve(absl::StrCat("--insecure --listen tcp:", host, ":0"));
    EXPECT_EQ(result.exit_code, 1) << result.output;
    EXPECT_THAT(result.output, HasSubstr("--insecure serves plain TCP on loopback addresses only"));
  }
}

TEST_F(LanStartTest, HalfATlsSetUpIsRefused) {
  const std::string listen = " --listen tcp:127.0.0.1:0";
  struct Case {
    std::string flags, says;
  } cases[] = {
      {"--tls-cert " + certs_.server_cert + " --token-file " + certs_.token,
       "--tls-cert and --tls-key go together"},
      {"--tls-cert " + certs_.server_cert + " --tls-key " + certs_.server_key,
       "TLS needs a --token-file too"},
      {"--token-file " + certs_.token, "a token over plain TCP travels in clear"},
      {"--insecure --tls-cert " + certs_.server_cert + " --tls-key " + certs_.server_key +
           " --token-file " + certs_.token,
       "contradict"},
      {"--tls-client-ca " + certs_.ca + " --token-file " + certs_.token,
       "--tls-client-ca needs --tls-cert and --tls-key"},
      // A key that is not the certificate's (gRPC said "address in use, or no
      // permission").
      {"--tls-cert " + certs_.server_cert + " --tls-key " + certs_.client_key + " --token-file " +
           certs_.token,
       "--tls-key " + certs_.client_key + ": not the private key of --tls-cert " +
           certs_.server_cert},
  };
  for (const Case& c : cases) {
    const CommandResult result = Serve(c.flags + listen);
    EXPECT_EQ(result.exit_code, 1) << c.flags << "\n" << result.output;
    EXPECT_THAT(result.output, HasSubstr(c.says)) << c.flags;
  }
}

// The probe's daemon started with an expired certificate, and its clients
// then saw "certificate verify failed".
TEST_F(LanStartTest, AnExpiredCertificateIsRefusedNamingTheDate) {
  const CommandResult result =
      Serve(absl::StrCat("--listen tcp:127.0.0.1:0 --tls-cert ", certs_.expired_cert,
                         " --tls-key ", certs_.server_key, " --token-file ", certs_.token));
  EXPECT_EQ(result.exit_code, 1) << result.output;
  EXPECT_THAT(result.output, AllOf(HasSubstr("--tls-cert " + certs_.expired_cert),
                                   HasSubstr("expired on Jan  2 00:00:00 2020 GMT")));
}

TEST_F(LanStartTest, UnusableFilesAreNamed) {
  const fs::path short_token = dir_ / "short-token";
  WriteSecret(short_token, "abc\n");
  const fs::path empty_token = dir_ / "empty-token";
  WriteSecret(empty_token, "# nothing yet\n\n");
  const fs::path open_token = dir_ / "open-token";
  WriteSecret(open_token, *ReadFileToString(certs_.token));
  fs::permissions(open_token, fs::perms::all);  // 0777: any user may add a token
  const fs::path open_key = dir_ / "open.key";
  fs::copy_file(certs_.server_key, open_key);
  fs::permissions(open_key, fs::perms::owner_read | fs::perms::owner_write |
                                fs::perms::group_read | fs::perms::others_read);  // 0644
  const fs::path not_pem = dir_ / "not.pem";
  std::ofstream(not_pem) << "hello\n";
  const fs::path cert_as_key = dir_ / "cert-as.key";
  WriteSecret(cert_as_key, *ReadFileToString(certs_.server_cert));
  const std::string tls = absl::StrCat("--listen tcp:127.0.0.1:0 --tls-key ", certs_.server_key);
  struct Case {
    std::string flags, says;
  } cases[] = {
      {absl::StrCat(tls, " --tls-cert ", certs_.server_cert, " --token-file ",
                    short_token.string()),
       short_token.string() + " line 1: 3 bytes; a token needs at least 16"},
      {absl::StrCat(tls, " --tls-cert ", certs_.server_cert, " --token-file ",
                    empty_token.string()),
       empty_token.string() + ": no token in it"},
      {absl::StrCat(tls, " --tls-cert ", not_pem.string(), " --token-file ", certs_.token),
       "--tls-cert " + not_pem.string() + ": not a PEM file"},
      {absl::StrCat(tls, " --tls-cert ", (dir_ / "absent.pem").string(), " --token-file ",
                    certs_.token),
       (dir_ / "absent.pem").string()},
      {absl::StrCat(tls, " --tls-cert ", certs_.server_cert, " --token-file ", open_token.string()),
       "token file " + open_token.string() + ": mode 0777 lets other users change it; chmod 600"},
      {absl::StrCat("--listen tcp:127.0.0.1:0 --tls-key ", open_key.string(), " --tls-cert ",
                    certs_.server_cert, " --token-file ", certs_.token),
       "--tls-key " + open_key.string() + ": mode 0644 lets other users read it"},
      {absl::StrCat("--listen tcp:127.0.0.1:0 --tls-key ", cert_as_key.string(), " --tls-cert ",
                    certs_.server_cert, " --token-file ", certs_.token),
       "--tls-key " + cert_as_key.string() + ": no private key in it"},
  };
  for (const Case& c : cases) {
    const CommandResult result = Serve(c.flags);
    EXPECT_EQ(result.exit_code, 1) << c.flags << "\n" << result.output;
    EXPECT_THAT(result.output, HasSubstr(c.says)) << c.flags;
  }
}

// What a client is refused before it connects: each names the flag or file.
TEST_F(LanSecurityTest, AClientsUnusableTlsFilesAreNamed) {
  const fs::path spaced = dir_ / "spaced-token";
  WriteSecret(spaced, "warp test token with spaces\n");
  const fs::path huge = dir_ / "huge-token";
  WriteSecret(huge, std::string(70 << 10, 'a') + "\n");
  const fs::path shared = dir_ / "shared-token";
  WriteSecret(shared, *ReadFileToString(certs_.token));
  fs::permissions(shared, fs::perms::others_write, fs::perm_options::add);
  const fs::path not_pem = dir_ / "not.pem";
  std::ofstream(not_pem) << "hello\n";
  struct Case {
    TlsClientFiles files;
    std::string says;
  } cases[] = {
      {{.token_file = certs_.token}, "a tls: store needs --tls-ca"},
      {{.ca = certs_.ca, .cert = certs_.client_cert, .token_file = certs_.token},
       "--tls-cert and --tls-key go together"},
      {{.ca = not_pem.string(), .token_file = certs_.token},
       "--tls-ca " + not_pem.string() + ": not a PEM file"},
      {{.ca = certs_.ca, .token_file = spaced.string()},
       spaced.string() + " line 1: a token is printable ASCII without spaces"},
      {{.ca = certs_.ca, .token_file = huge.string()},
       huge.string() + ": 71681 bytes; at most 64 KiB"},
      {{.ca = certs_.ca, .token_file = shared.string()},
       shared.string() + ": mode 0602 lets other users change it"},
      {{.ca = certs_.ca, .cert = certs_.expired_cert, .key = certs_.server_key,
        .token_file = certs_.token},
       "--tls-cert " + certs_.expired_cert + ": the certificate expired on"},
  };
  for (const Case& c : cases) {
    auto client = GrpcExpertSource::Connect({.address = "tls:127.0.0.1:1", .tls = c.files});
    ASSERT_FALSE(client.ok()) << c.says;
    EXPECT_THAT(std::string(client.status().message()),
                AllOf(HasSubstr("expertd at tls:127.0.0.1:1"), HasSubstr(c.says)));
  }
}

// A token file rewritten badly (mid-edit, a short token) keeps the tokens
// read before; a good rewrite replaces them.
TEST_F(LanSecurityTest, ABadRewriteOfTheTokenFileKeepsTheTokensBefore) {
  const fs::path tokens = dir_ / "tokens";
  fs::copy_file(certs_.token, tokens);
  auto checker = TokenChecker::Open(tokens.string());
  WARP_ASSERT_OK(checker);
  const std::string old_token = "warp-test-token-0123456789abcdef";  // make_test_certificates.sh
  const std::string new_token = "warp-new-token-0123456789abcdef";
  ASSERT_TRUE((*checker)->Accepts(old_token));
  std::ofstream(tokens) << "short\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the recheck interval
  EXPECT_TRUE((*checker)->Accepts(old_token));
  // Made world-writable (the probe: any local user could add a token).
  std::ofstream(tokens) << "warp-intruder-token-0123456789\n";
  fs::permissions(tokens, fs::perms::others_write, fs::perm_options::add);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_FALSE((*checker)->Accepts("warp-intruder-token-0123456789"));
  EXPECT_TRUE((*checker)->Accepts(old_token));
  fs::permissions(tokens, fs::perms::others_write, fs::perm_options::remove);
  std::ofstream(tokens) << new_token << "\n";
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_FALSE((*checker)->Accepts(old_token));
  EXPECT_TRUE((*checker)->Accepts(new_token));
}

TEST(LanAuthTest, TokensCompareByEveryByte) {
  EXPECT_TRUE(TokensEqual("0123456789abcdef", "0123456789abcdef"));
  EXPECT_FALSE(TokensEqual("0123456789abcdef", "0123456789abcdeg"));
  EXPECT_FALSE(TokensEqual("0123456789abcdef", "0123456789abcdef0"));
  EXPECT_FALSE(TokensEqual("", "x"));
  EXPECT_TRUE(TokensEqual("", ""));
}

TEST(LanAuthTest, LoopbackHosts) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host :
       {"0.0.0.0", "10.0.0.1", "[::]", "128.0.0.1", "localhost.evil", "127.example.com"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
  EXPECT_EQ(HostOfHostPort("[::1]:7070"), "[::1]");
  EXPECT_EQ(HostOfHostPort("10.0.0.1:0"), "10.0.0.1");
}

}  // namespace
}  // namespace warp::expertd
