#include "computed/serve/tls_terminator.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace warp::computed::serve {
namespace {

std::string OpenSslError() {
  const unsigned long code = ::ERR_get_error();
  if (code == 0) return "no detail";
  char text[256];
  ::ERR_error_string_n(code, text, sizeof(text));
  return text;
}

void SetTimeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{.tv_sec = static_cast<time_t>(timeout.count() / 1000),
             .tv_usec = static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool SslWriteAll(SSL* ssl, const char* data, size_t size) {
  while (size > 0) {
    const int n = ::SSL_write(ssl, data, static_cast<int>(size));
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Moves bytes both ways between the TLS client and the front's plaintext end
// until either ends.
void Pump(SSL* ssl, int client, int plain) {
  char buffer[16 << 10];
  while (true) {
    if (::SSL_pending(ssl) == 0) {
      pollfd polls[2] = {{.fd = client, .events = POLLIN, .revents = 0},
                         {.fd = plain, .events = POLLIN, .revents = 0}};
      int ready;
      do ready = ::poll(polls, 2, -1);
      while (ready < 0 && errno == EINTR);
      if (ready < 0) return;
      if (polls[1].revents != 0) {
        const ssize_t n = ::recv(plain, buffer, sizeof(buffer), 0);
        if (n <= 0 || !SslWriteAll(ssl, buffer, static_cast<size_t>(n))) return;
        if (polls[0].revents == 0) continue;
      }
    }
    const int n = ::SSL_read(ssl, buffer, sizeof(buffer));  // a record, or the idle timeout
    if (n <= 0 || !WriteAll(plain, buffer, static_cast<size_t>(n))) return;
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<TlsTerminator>> TlsTerminator::Create(const std::string& cert_path,
                                                                     const std::string& key_path) {
  SSL_CTX* context = ::SSL_CTX_new(::TLS_server_method());
  if (context == nullptr)
    return absl::InternalError("cannot make a TLS context: " + OpenSslError());
  ::SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION);
  if (::SSL_CTX_use_certificate_chain_file(context, cert_path.c_str()) != 1) {
    ::SSL_CTX_free(context);
    return absl::InvalidArgumentError(absl::StrCat("--ssl-cert-file ", cert_path,
                                                   ": not a readable PEM certificate chain (",
                                                   OpenSslError(), ")"));
  }
  if (::SSL_CTX_use_PrivateKey_file(context, key_path.c_str(), SSL_FILETYPE_PEM) != 1 &&
      ERR_GET_REASON(::ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
    ::SSL_CTX_free(context);
    return absl::InvalidArgumentError(absl::StrCat(
        "--ssl-key-file ", key_path, ": not a readable PEM private key (", OpenSslError(), ")"));
  }
  if (::SSL_CTX_check_private_key(context) != 1) {
    ::SSL_CTX_free(context);
    return absl::InvalidArgumentError(absl::StrCat(
        "--ssl-key-file ", key_path, " is not the key of --ssl-cert-file ", cert_path));
  }
  return std::unique_ptr<TlsTerminator>(new TlsTerminator(context));
}

TlsTerminator::~TlsTerminator() { ::SSL_CTX_free(context_); }

int TlsTerminator::Wrap(int client, std::chrono::milliseconds handshake_timeout,
                        std::chrono::milliseconds idle_timeout) const {
  int pair[2];
  SSL* ssl = ::SSL_new(context_);
  if (ssl == nullptr || ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    if (ssl != nullptr) ::SSL_free(ssl);
    ::close(client);
    return -1;
  }
  ::SSL_set_fd(ssl, client);
  std::thread([ssl, client, plain = pair[1], handshake_timeout, idle_timeout] {
    // OpenSSL writes with write(): a client gone mid-reply must be EPIPE for
    // this thread, not SIGPIPE for the process (computed ignores SIGPIPE
    // today, by a library's doing at start: not something to rely on).
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
    SetTimeouts(client, handshake_timeout);
    if (::SSL_accept(ssl) == 1) {
      SetTimeouts(client, idle_timeout);
      Pump(ssl, client, plain);
      ::SSL_shutdown(ssl);
    } else {
      Logger("serve").debug("a TLS handshake failed: {}", OpenSslError());
    }
    ::ERR_clear_error();
    ::SSL_free(ssl);
    ::close(client);
    ::close(plain);  // the front reads end of stream
  }).detach();
  return pair[0];
}

}  // namespace warp::computed::serve
