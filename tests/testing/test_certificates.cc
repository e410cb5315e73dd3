#include "tests/testing/test_certificates.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace warp::testing {
namespace {

// EC keys: generated in milliseconds, unlike RSA.
constexpr char kScript[] = R"(set -e
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1"; }
key ca.key
openssl req -x509 -new -key ca.key -out ca.pem -days 30 -subj /CN=warp-test-ca
key other-ca.key
openssl req -x509 -new -key other-ca.key -out other-ca.pem -days 30 -subj /CN=warp-other-ca
key server.key
openssl req -new -key server.key -out server.csr -subj /CN=localhost
printf 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n' > san.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
  -days 30 -extfile san.ext
key client.key
openssl req -new -key client.key -out client.csr -subj /CN=computed
openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 30
# `openssl ca` is the one that takes explicit dates (openssl 3.0's x509 does not).
mkdir -p db && : > db/index.txt && echo 01 > db/serial
printf '[ca]\ndefault_ca = t\n[t]\ndatabase = db/index.txt\nserial = db/serial\n%s\n%s\n' \
  'new_certs_dir = db' 'default_md = sha256
policy = p
copy_extensions = copy
[p]
commonName = supplied' > ca.cnf
openssl ca -batch -notext -config ca.cnf -cert ca.pem -keyfile ca.key -in server.csr \
  -out expired.pem -startdate 20200101000000Z -enddate 20200102000000Z -extfile san.ext
echo 'warp-test-token-0123456789abcdef' > token
echo 'warp-other-token-fedcba9876543210' > other-token
chmod 600 token other-token
)";

}  // namespace

absl::StatusOr<TestCertificates> MakeTestCertificates(const std::filesystem::path& dir) {
  const std::filesystem::path script = dir / "make-certificates.sh";
  std::ofstream(script) << kScript;
  const std::string command =
      absl::StrCat("cd '", dir.string(), "' && bash make-certificates.sh 2>&1");
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError("making test certificates: popen failed");
  std::string output;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0;) output.append(chunk, n);
  if (::pclose(pipe) != 0) {
    return absl::InternalError(absl::StrCat("making test certificates: ", output));
  }
  const auto at = [&](const char* name) { return (dir / name).string(); };
  return TestCertificates{.ca = at("ca.pem"),
                          .other_ca = at("other-ca.pem"),
                          .server_cert = at("server.pem"),
                          .server_key = at("server.key"),
                          .expired_cert = at("expired.pem"),
                          .client_cert = at("client.pem"),
                          .client_key = at("client.key"),
                          .token = at("token"),
                          .other_token = at("other-token")};
}

}  // namespace warp::testing
