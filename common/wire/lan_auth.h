#pragma once

// Security of expertd's TCP listeners and of their clients: TLS credentials
// from PEM files and a shared token sent as call metadata
// ("authorization: Bearer TOKEN") and compared in constant time. A token
// file holds one token per line (blank lines and `#` comments skipped); the
// daemon accepts any of them, which lets a token be rotated without a gap,
// and reads the file again when it changes. A client sends the first.
//
// Thread-safe: TokenChecker locks its token list; the rest are functions.

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"

namespace warp {

inline constexpr std::string_view kTokenMetadataKey = "authorization";
inline constexpr std::string_view kTokenPrefix = "Bearer ";

// The tokens of a token file. Errors name the file: unreadable, no token, a
// token with a byte outside printable ASCII (metadata values must be), or
// one shorter than 16 bytes (too easy to guess).
absl::StatusOr<std::vector<std::string>> ReadTokenFile(const std::string& path);

// A PEM file's text; `flag` names the option it came from, for errors.
absl::StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view flag);

// A file holding a secret (a token file, a private key) is refused, as ssh
// refuses an unprotected key, when any user may read it, when others than
// its owner may change it, or when it belongs to another user than this
// process's or root. Group-readable stays allowed: a service group
// (deploy/README.md) is how a daemon's user is given the file.
absl::Status CheckSecretFile(const std::string& path, std::string_view what);

// A certificate (the first of a PEM chain) and its private key, before TLS
// uses them: refused when the certificate expired or is not valid yet, naming
// the date, or when the key is not the certificate's; a warning when it
// expires within two weeks.
absl::Status CheckCertificateAndKey(const std::string& cert_pem, const std::string& key_pem,
                                    std::string_view cert_flag, const std::string& cert_path,
                                    std::string_view key_flag, const std::string& key_path);

// Equal bytes, in time that depends on the lengths only.
bool TokensEqual(std::string_view a, std::string_view b);

// 127.0.0.0/8, ::1 (bare or bracketed) and localhost.
bool IsLoopbackHost(std::string_view host);

// The host of "HOST:PORT" ("[::1]:7070" -> "[::1]").
std::string_view HostOfHostPort(std::string_view host_port);

// What a TLS client of expertd presents.
struct TlsClientFiles {
  std::string ca;          // PEM roots that signed the daemon's certificate
  std::string cert, key;   // optional: the client's own, for mutual TLS
  std::string token_file;  // its first token is sent with every call
};

// SSL channel credentials carrying the token with every call. Errors name
// the file that could not be used.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> TlsChannelCredentials(
    const TlsClientFiles& files);

// What a TLS listener of expertd presents and requires.
struct TlsServerFiles {
  std::string cert, key;   // the daemon's certificate chain and key
  std::string client_ca;   // optional: require client certificates it signed
  std::string token_file;  // required: the tokens accepted
};

// The server side of the token: refuses a call without a token of the file
// (UNAUTHENTICATED), before any handler runs.
class TokenChecker : public grpc::AuthMetadataProcessor {
 public:
  static absl::StatusOr<std::shared_ptr<TokenChecker>> Open(const std::string& path);

  bool IsBlocking() const override { return false; }  // a compare, and a stat a second
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata,
                       OutputMetadata* response_metadata) override;

  // True if `token` is one of the file's (reading it again if it changed).
  bool Accepts(std::string_view token);

 private:
  explicit TokenChecker(std::string path) : path_(std::move(path)) {}
  void ReloadIfChanged() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex_);

  const std::string path_;
  absl::Mutex mutex_;
  std::vector<std::string> tokens_ ABSL_GUARDED_BY(mutex_);
  std::chrono::steady_clock::time_point checked_ ABSL_GUARDED_BY(mutex_);
  int64_t mtime_ns_ ABSL_GUARDED_BY(mutex_) = 0;
};

// SSL server credentials with a TokenChecker. Errors name the file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> TlsServerCredentials(
    const TlsServerFiles& files);

}  // namespace warp
