#pragma once

// HttpFront: the server's listening socket, in front of cpp-httplib.
//
// Debian's cpp-httplib 0.11 bounds neither a head's field count nor a line
// without a newline, reads whole chunked bodies past its payload limit, reads
// the bodies of routes that take none, and has no header-read timeout of its
// own: one client could grow the server without limit or hold its threads
// (docs/RELIABILITY.md, the probe of issue 44). Its limits are compiled into
// the shared library, so the bound sits in front of it: each client
// connection is read here, to bounds, and only a whole, well-formed request
// reaches httplib, over a private Unix socket, one request per upstream
// connection ("Connection: close"); the response is relayed back as it comes,
// and the client keeps its connection alive when the response is framed.
//
//   - a head over 64 KiB or 100 fields: 431, before more is read;
//   - a head not whole within `head_timeout` of its first byte: 408;
//   - a body over `max_body_bytes` (Content-Length, or chunked as it
//     arrives): 413, on every route, before it is read; chunked bodies are
//     decoded here and reach httplib with a Content-Length;
//   - bodies held at once over `body_memory_bytes`: 503;
//   - connections over `max_connections`, or over `max_connections_per_client`
//     from one address: 503, at once;
//   - an idle keep-alive connection is closed after `idle_timeout`.
// httplib learns the client's address from an X-Warp-Peer field this adds
// (the client's own is dropped).
//
// Thread contract: Bind, then Serve on one thread (it runs the accept loop;
// each connection gets a thread of its own); Stop from any thread ends every
// connection and returns once they are gone.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "computed/serve/http_head.h"
#include "computed/serve/tls_terminator.h"

namespace warp::computed::serve {

// The field carrying the client's address to httplib.
inline constexpr char kPeerField[] = "X-Warp-Peer";

struct FrontOptions {
  std::string host = "127.0.0.1";
  int port = 8080;             // 0: any free one
  std::string upstream_path;   // httplib's Unix socket
  HeadLimits head;
  uint64_t max_body_bytes = 16 << 20;
  uint64_t body_memory_bytes = 256 << 20;
  std::chrono::milliseconds head_timeout{10'000};
  std::chrono::milliseconds body_read_timeout{10'000};  // between reads of a body
  std::chrono::milliseconds idle_timeout{60'000};       // before the next request
  std::chrono::milliseconds write_timeout{30'000};      // a client that takes nothing
  size_t max_connections = 512;
  size_t max_connections_per_client = 64;
  // Both set: clients speak TLS (TlsTerminator); the handshake has head_timeout.
  std::string tls_cert, tls_key;
};

// What the front refused, for tests and logs.
struct FrontCounters {
  uint64_t connections = 0;
  uint64_t refused_busy = 0;  // over a connection cap or the body memory
  uint64_t head_too_large = 0;
  uint64_t body_too_large = 0;
  uint64_t malformed = 0;
  uint64_t timed_out = 0;
};

class HttpFront {
 public:
  explicit HttpFront(FrontOptions options);
  ~HttpFront();

  // Binds and listens: the port, or what went wrong, naming the address.
  absl::StatusOr<int> Bind();
  void Serve();
  void Stop();
  FrontCounters counters() const;

 private:
  friend class FrontConnection;
  void Run(int fd, const std::string& client);
  // Connection accounting; false: over a cap (the connection is refused).
  bool Admit(const std::string& client);
  void Leave(const std::string& client);
  // Sockets Stop must wake.
  void Track(int fd);
  void Untrack(int fd);
  // Bodies held at once.
  bool ReserveBody(uint64_t bytes);
  void ReleaseBody(uint64_t bytes);
  void Count(uint64_t FrontCounters::*counter);

  const FrontOptions options_;
  std::unique_ptr<TlsTerminator> tls_;  // null: plain HTTP
  int listen_fd_ = -1;
  mutable std::mutex mutex_;
  std::condition_variable idle_;
  bool stopping_ = false;
  size_t open_ = 0;  // connection threads running
  std::map<std::string, size_t> per_client_;
  std::set<int> tracked_;
  uint64_t body_bytes_ = 0;
  FrontCounters counters_;
};

}  // namespace warp::computed::serve
