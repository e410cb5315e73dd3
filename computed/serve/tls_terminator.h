#pragma once

// TlsTerminator: TLS for the server's client connections (`serve
// --ssl-cert-file --ssl-key-file`, llama-server's flags). Each accepted socket gets a pump thread
// of its own that does the handshake and the records with OpenSSL and hands the plaintext to
// HttpFront over a socketpair, so that every bound the front applies to a client (heads, bodies,
// timeouts, connection caps) applies to a TLS client unchanged, and the front stays the one place
// that parses HTTP.
//
// Thread-safe: Wrap from any thread; each pump owns its connection.

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace warp::computed::serve {

class TlsTerminator {
 public:
  // The certificate chain and key (PEM): an error names the file at fault,
  // or a key that does not match the certificate.
  static absl::StatusOr<std::unique_ptr<TlsTerminator>> Create(const std::string& cert_path,
                                                               const std::string& key_path);
  ~TlsTerminator();

  // Takes `client` (a connected socket) and returns the plaintext end the
  // front reads and writes, or -1 (and closes `client`). A handshake not
  // done within `handshake_timeout`, or a client silent for `idle_timeout`
  // mid-connection, ends the pump: the front then reads end of stream.
  int Wrap(int client, std::chrono::milliseconds handshake_timeout,
           std::chrono::milliseconds idle_timeout) const;

 private:
  explicit TlsTerminator(SSL_CTX* context) : context_(context) {}
  SSL_CTX* const context_;
};

}  // namespace warp::computed::serve
