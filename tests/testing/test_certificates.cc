#include "tests/testing/test_certificates.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "tests/testing/fixtures.h"

namespace warp::testing {

absl::StatusOr<TestCertificates> MakeTestCertificates(const std::filesystem::path& dir) {
  const std::string command =
      absl::StrCat("bash '", (SourceDir() / "tests/testing/make_test_certificates.sh").string(),
                   "' '", dir.string(), "' 2>&1");
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
