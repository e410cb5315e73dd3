#include "computed/serve/http_front.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "computed/serve/api_error.h"
#include "computed/serve/log_budget.h"

namespace warp::computed::serve {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

spdlog::logger& Log() { return Logger("serve"); }

// Refusals logged, a few a minute (a client could otherwise flood the log).
LogBudget& RefusalLog() {
  static LogBudget budget(20);
  return budget;
}

// The response head relayed from httplib, a trusted peer: generous bounds.
constexpr HeadLimits kUpstreamHead{.max_bytes = 1 << 20, .max_fields = 1000};
// Bytes of a refused request's body drained after the reply, and for how
// long, so that the client reads the reply instead of a reset.
constexpr size_t kLingerBytes = 16 << 20;
constexpr milliseconds kLinger{1000};

const char* Reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
  }
  return "Error";
}

// An error response that ends the connection.
std::string ErrorResponse(const ApiError& error) {
  const std::string body = error.ToJson().dump();
  return absl::StrCat("HTTP/1.1 ", error.http_status, " ", Reason(error.http_status),
                      "\r\nContent-Type: application/json\r\nContent-Length: ", body.size(),
                      "\r\nConnection: close\r\n", error.http_status == 503 ? "Retry-After: 1\r\n" : "",
                      "\r\n", body);
}

int RemainingMs(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(0, left));
}

// Appends what arrives on `fd` within `timeout_ms` (-1: no limit): the byte
// count, 0 at end of stream, -1 on timeout or error.
ssize_t ReadSome(int fd, std::string* buffer, int timeout_ms) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  int ready;
  do ready = ::poll(&p, 1, timeout_ms); while (ready < 0 && errno == EINTR);
  if (ready <= 0) return -1;
  char chunk[64 << 10];
  ssize_t n;
  do n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT); while (n < 0 && errno == EINTR);
  if (n > 0) buffer->append(chunk, static_cast<size_t>(n));
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return ReadSome(fd, buffer, timeout_ms);
  return n;
}

// Writes all of `data` unless the peer takes nothing for `timeout_ms`.
bool WriteAll(int fd, std::string_view data, int timeout_ms) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
      int ready;
      do ready = ::poll(&p, 1, timeout_ms); while (ready < 0 && errno == EINTR);
      if (ready <= 0 || (p.revents & (POLLERR | POLLHUP))) return false;
      continue;
    }
    return false;
  }
  return true;
}

int ConnectUnix(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::memcpy(address.sun_path, path.c_str(),
              std::min(path.size() + 1, sizeof(address.sun_path)));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string AddressOf(const sockaddr_storage& address) {
  char host[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, host,
                sizeof(host));
  } else if (address.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, host,
                sizeof(host));
  }
  return host;
}

bool HasToken(const HttpHead& head, std::string_view field, std::string_view token) {
  for (std::string_view value : head.Values(field)) {
    if (absl::EqualsIgnoreCase(absl::string_view(value.data(), value.size()),
                               absl::string_view(token.data(), token.size()))) {
      return true;
    }
  }
  return false;
}

}  // namespace

// One client connection: requests read to bounds, each sent to httplib on a
// connection of its own, its response relayed back.
// Thread contract: runs on its own thread; touches the front only through its
// locked accounting.
class FrontConnection {
 public:
  FrontConnection(HttpFront& front, int fd, std::string client)
      : front_(front), options_(front.options_), fd_(fd), client_(std::move(client)) {}
  ~FrontConnection() { front_.ReleaseBody(reserved_); }

  void Run() {
    bool first = true;
    while (ServeOne(first)) first = false;
  }

 private:
  // One request and its response; false when the connection ends.
  bool ServeOne(bool first) {
    // The head: its first byte within the idle time (the head timeout for a
    // new connection), all of it within the head timeout of that byte.
    HeadScan scan;
    Clock::time_point deadline = Clock::now() + (first ? options_.head_timeout : options_.idle_timeout);
    bool started = !buffer_.empty();
    if (started) deadline = Clock::now() + options_.head_timeout;
    while ((scan = ScanHead(buffer_, options_.head)).state == HeadScan::State::kIncomplete) {
      const ssize_t n = ReadSome(fd_, &buffer_, RemainingMs(deadline));
      if (n == 0) return false;
      if (n < 0) {
        if (!started) return false;  // an idle connection closes quietly
        front_.Count(&FrontCounters::timed_out);
        return Refuse({.http_status = 408,
                       .message = absl::StrCat("the request head did not arrive within ",
                                               options_.head_timeout.count(), " ms"),
                       .code = "request_timeout"});
      }
      if (!started) {
        started = true;
        deadline = Clock::now() + options_.head_timeout;
      }
    }
    if (scan.state == HeadScan::State::kTooLarge) {
      front_.Count(&FrontCounters::head_too_large);
      return Refuse({.http_status = 431,
                     .message = absl::StrCat("the request head is larger than ",
                                             options_.head.max_bytes, " bytes or ",
                                             options_.head.max_fields, " fields"),
                     .code = "request_header_fields_too_large"});
    }
    std::optional<HttpHead> head = ParseHead(std::string_view(buffer_).substr(0, scan.end));
    buffer_.erase(0, scan.end);
    if (!head) return Malformed("the request head is malformed");
    const std::string& line = head->start_line;
    const size_t space = line.find(' '), last = line.rfind(' ');
    if (space == std::string::npos || space == last) {
      return Malformed("the request line is not METHOD TARGET HTTP/1.1");
    }
    const std::string method = line.substr(0, space);
    const std::string version = line.substr(last + 1);
    if (version != "HTTP/1.1" && version != "HTTP/1.0") {
      return Refuse({.http_status = 505,
                     .message = absl::StrCat("unsupported protocol version: ", version)});
    }
    FramingResult framing = RequestFraming(*head);
    if (!framing.error.empty()) {
      if (framing.not_implemented) {
        return Refuse({.http_status = 501, .message = framing.error});
      }
      return Malformed(framing.error);
    }
    std::string body;
    if (!ReadBody(*head, framing.framing, &body)) return false;
    const bool keep_alive = version == "HTTP/1.1" ? !HasToken(*head, "Connection", "close")
                                                  : HasToken(*head, "Connection", "keep-alive");

    for (const char* hop : {"Connection", "Keep-Alive", "Transfer-Encoding", "Content-Length",
                            "Expect", kPeerField}) {
      head->Remove(hop);
    }
    head->fields.emplace_back("Connection", "close");
    head->fields.emplace_back(kPeerField, client_);
    if (framing.framing.kind != BodyFraming::Kind::kNone) {
      head->fields.emplace_back("Content-Length", std::to_string(body.size()));
    }
    const bool relayed = Relay(head->Serialize(), body, method == "HEAD", keep_alive);
    front_.ReleaseBody(reserved_);
    reserved_ = 0;
    return relayed;
  }

  // Reads the body into `*body` within the bounds; false: the connection
  // ended (refused, or the client left).
  bool ReadBody(const HttpHead& head, const BodyFraming& framing, std::string* body) {
    if (framing.kind == BodyFraming::Kind::kNone) return true;
    const bool expects_continue = HasToken(head, "Expect", "100-continue");
    auto too_large = [&] {
      front_.Count(&FrontCounters::body_too_large);
      return Refuse({.http_status = 413,
                     .message = absl::StrCat("the request body is larger than ",
                                             options_.max_body_bytes, " bytes"),
                     .code = "request_too_large"});
    };
    auto reserve = [&](uint64_t bytes) {
      if (bytes <= reserved_) return true;
      if (!front_.ReserveBody(bytes - reserved_)) return false;
      reserved_ = bytes;
      return true;
    };
    auto busy = [&] {
      front_.Count(&FrontCounters::refused_busy);
      return Refuse({.http_status = 503,
                     .message = "the server holds as many request bodies as it may; retry",
                     .type = "server_error"});
    };
    if (framing.kind == BodyFraming::Kind::kLength) {
      if (framing.length > options_.max_body_bytes) return too_large();
      if (!reserve(framing.length)) return busy();
    }
    if (expects_continue && !WriteAll(fd_, "HTTP/1.1 100 Continue\r\n\r\n", WriteTimeout())) {
      return false;
    }
    ChunkedDecoder chunks(options_.max_body_bytes);
    while (true) {
      if (framing.kind == BodyFraming::Kind::kLength) {
        if (buffer_.size() >= framing.length) {
          body->assign(buffer_, 0, framing.length);
          buffer_.erase(0, framing.length);
          return true;
        }
      } else {
        size_t used = 0;
        const ChunkedDecoder::Result result = chunks.Feed(buffer_, &used, body);
        buffer_.erase(0, used);
        if (result == ChunkedDecoder::Result::kTooLarge) return too_large();
        if (result == ChunkedDecoder::Result::kMalformed) {
          return Malformed("the chunked request body is malformed");
        }
        if (!reserve(body->size())) return busy();
        if (result == ChunkedDecoder::Result::kDone) return true;
      }
      const ssize_t n = ReadSome(fd_, &buffer_, static_cast<int>(options_.body_read_timeout.count()));
      if (n == 0) return false;
      if (n < 0) {
        front_.Count(&FrontCounters::timed_out);
        return Refuse({.http_status = 408,
                       .message = absl::StrCat("the request body stalled for ",
                                               options_.body_read_timeout.count(), " ms"),
                       .code = "request_timeout"});
      }
    }
  }

  // Sends the request to httplib and its response to the client; false when
  // the client connection ends with it.
  bool Relay(const std::string& head, const std::string& body, bool head_only, bool keep_alive) {
    const int upstream = ConnectUnix(options_.upstream_path);
    if (upstream < 0) {
      return Refuse({.http_status = 503, .message = "the server is stopping", .type = "server_error"});
    }
    front_.Track(upstream);
    const bool result = RelayOver(upstream, head + body, head_only, keep_alive);
    front_.Untrack(upstream);
    ::close(upstream);
    return result;
  }

  bool RelayOver(int upstream, const std::string& request, bool head_only, bool keep_alive) {
    if (!WriteAll(upstream, request, -1)) return false;
    // The response head, to decide whether the client may keep its connection.
    std::string response;
    HeadScan scan;
    while ((scan = ScanHead(response, kUpstreamHead)).state == HeadScan::State::kIncomplete) {
      if (ReadSome(upstream, &response, -1) <= 0) return false;
    }
    if (scan.state != HeadScan::State::kComplete) return false;
    std::optional<HttpHead> head = ParseHead(std::string_view(response).substr(0, scan.end));
    if (!head) return false;
    const bool framed = head_only || !head->Values("Transfer-Encoding").empty() ||
                        head->Field("Content-Length").has_value();
    keep_alive = keep_alive && framed;
    head->Remove("Connection");
    head->fields.emplace_back("Connection", keep_alive ? "keep-alive" : "close");
    if (!WriteAll(fd_, head->Serialize(), WriteTimeout())) return false;
    response.erase(0, scan.end);
    // The body until httplib closes (it was asked to), watching for a client
    // that leaves: closing the upstream connection then cancels the request.
    while (true) {
      if (!response.empty() && !WriteAll(fd_, response, WriteTimeout())) return false;
      response.clear();
      pollfd polls[2] = {{.fd = upstream, .events = POLLIN, .revents = 0},
                         {.fd = fd_, .events = POLLRDHUP, .revents = 0}};
      int ready;
      do ready = ::poll(polls, 2, -1); while (ready < 0 && errno == EINTR);
      if (ready < 0 || (polls[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) return false;
      if (polls[0].revents == 0) continue;
      const ssize_t n = ReadSome(upstream, &response, 0);
      if (n == 0) return keep_alive;
      if (n < 0) return false;
    }
  }

  bool Malformed(std::string message) {
    front_.Count(&FrontCounters::malformed);
    return Refuse({.http_status = 400, .message = std::move(message)});
  }

  // Sends `error`, drains what the client still sends for a moment (so that
  // it reads the reply rather than a reset), and ends the connection.
  bool Refuse(const ApiError& error) {
    uint64_t dropped = 0;
    if (RefusalLog().Allow(&dropped)) {
      Log().warn("{}: {} {}{}", client_, error.http_status, error.message,
                 dropped ? absl::StrCat(" (", dropped, " more refusals not logged)") : "");
    }
    if (!WriteAll(fd_, ErrorResponse(error), WriteTimeout())) return false;
    ::shutdown(fd_, SHUT_WR);
    const Clock::time_point until = Clock::now() + kLinger;
    size_t drained = 0;
    std::string sink;
    while (drained < kLingerBytes && ReadSome(fd_, &sink, RemainingMs(until)) > 0) {
      drained += sink.size();
      sink.clear();
    }
    return false;
  }

  int WriteTimeout() const { return static_cast<int>(options_.write_timeout.count()); }

  HttpFront& front_;
  const FrontOptions& options_;
  const int fd_;
  const std::string client_;
  std::string buffer_;     // read from the client, not yet used
  uint64_t reserved_ = 0;  // of the front's body memory
};

HttpFront::HttpFront(FrontOptions options) : options_(std::move(options)) {}

HttpFront::~HttpFront() {
  Stop();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

absl::StatusOr<int> HttpFront::Bind() {
  if (!options_.tls_cert.empty()) {
    absl::StatusOr<std::unique_ptr<TlsTerminator>> tls =
        TlsTerminator::Create(options_.tls_cert, options_.tls_key);
    if (!tls.ok()) return tls.status();
    tls_ = *std::move(tls);
  }
  const std::string address = absl::StrCat(options_.host, ":", options_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.port);
  if (const int error = ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found);
      error != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen ", address, ": ", ::gai_strerror(error)));
  }
  int fd = -1;
  for (addrinfo* at = found; at != nullptr && fd < 0; at = at->ai_next) {
    fd = ::socket(at->ai_family, at->ai_socktype | SOCK_CLOEXEC, at->ai_protocol);
    if (fd < 0) continue;
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));  // not SO_REUSEPORT: a
    // second server on the port must fail to bind, not share it
    if (::bind(fd, at->ai_addr, at->ai_addrlen) != 0 || ::listen(fd, 1024) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("--listen ", address,
                     ": cannot listen there (the port is in use, or the host is not "
                     "an address of this machine)"));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
  listen_fd_ = fd;
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6&>(bound).sin6_port
                                           : reinterpret_cast<sockaddr_in&>(bound).sin_port);
}

void HttpFront::Serve() {
  while (true) {
    sockaddr_storage peer{};
    socklen_t length = sizeof(peer);
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &length, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: wait for connections to end rather than spin.
        std::this_thread::sleep_for(milliseconds(50));
        continue;
      }
      Log().error("accept on {}:{}: {}", options_.host, options_.port, std::strerror(errno));
      return;
    }
    const std::string client = AddressOf(peer);
    if (!Admit(client)) {
      const std::string refusal = ErrorResponse(
          {.http_status = 503,
           .message = "too many connections from this address, or to this server; retry",
           .type = "server_error"});
      ::send(fd, refusal.data(), refusal.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::close(fd);
      continue;
    }
    if (tls_ != nullptr) {  // the front reads and writes the plaintext end
      fd = tls_->Wrap(fd, options_.head_timeout, options_.idle_timeout);
      if (fd < 0) {
        Leave(client);
        continue;
      }
    }
    Track(fd);
    std::thread([this, fd, client] { Run(fd, client); }).detach();
  }
}

void HttpFront::Run(int fd, const std::string& client) {
  FrontConnection(*this, fd, client).Run();
  Untrack(fd);
  ::close(fd);
  Leave(client);
}

void HttpFront::Stop() {
  std::unique_lock lock(mutex_);
  stopping_ = true;
  if (listen_fd_ >= 0) ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept
  for (int fd : tracked_) ::shutdown(fd, SHUT_RDWR);
  idle_.wait(lock, [&] { return open_ == 0; });
}

bool HttpFront::Admit(const std::string& client) {
  std::lock_guard lock(mutex_);
  ++counters_.connections;
  size_t& from_client = per_client_[client];
  if (stopping_ || open_ >= options_.max_connections ||
      from_client >= options_.max_connections_per_client) {
    ++counters_.refused_busy;
    if (from_client == 0) per_client_.erase(client);
    uint64_t dropped = 0;
    if (RefusalLog().Allow(&dropped)) {
      Log().warn("{}: connection refused: {} open, {} from this address{}", client, open_,
                 from_client, dropped ? absl::StrCat(" (", dropped, " more not logged)") : "");
    }
    return false;
  }
  ++from_client;
  ++open_;
  return true;
}

void HttpFront::Leave(const std::string& client) {
  std::lock_guard lock(mutex_);
  if (--per_client_[client] == 0) per_client_.erase(client);
  if (--open_ == 0) idle_.notify_all();
}

void HttpFront::Track(int fd) {
  std::lock_guard lock(mutex_);
  tracked_.insert(fd);
  if (stopping_) ::shutdown(fd, SHUT_RDWR);
}

void HttpFront::Untrack(int fd) {
  std::lock_guard lock(mutex_);
  tracked_.erase(fd);
}

bool HttpFront::ReserveBody(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (body_bytes_ + bytes > options_.body_memory_bytes) return false;
  body_bytes_ += bytes;
  return true;
}

void HttpFront::ReleaseBody(uint64_t bytes) {
  std::lock_guard lock(mutex_);
  body_bytes_ -= bytes;
}

void HttpFront::Count(uint64_t FrontCounters::*counter) {
  std::lock_guard lock(mutex_);
  ++(counters_.*counter);
}

FrontCounters HttpFront::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace warp::computed::serve
