#pragma once

// Throwaway TLS material for the LAN tests, made by
// tests/testing/make_test_certificates.sh (the openssl command) in a temp dir: a CA and a server
// certificate it signed (for 127.0.0.1, ::1 and localhost), a client certificate it signed, the
// same server key with a certificate that expired in 2020, a second CA that signed nothing here,
// and two token files.
//
// Thread-compatible.

#include <filesystem>
#include <string>

#include "absl/status/statusor.h"

namespace warp::testing {

struct TestCertificates {
  std::string ca, other_ca;             // PEM CA certificates
  std::string server_cert, server_key;  // signed by ca
  std::string expired_cert;             // server_key's, signed by ca, expired
  std::string client_cert, client_key;  // signed by ca
  std::string token, other_token;       // files of one token each
};

// Writes them under `dir` (which must exist). Errors carry openssl's output.
absl::StatusOr<TestCertificates> MakeTestCertificates(const std::filesystem::path& dir);

}  // namespace warp::testing
