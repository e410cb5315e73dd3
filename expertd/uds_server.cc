#include "expertd/uds_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/wire/fastpath_frame.h"
#include "common/wire/proto_convert.h"
#include "expertd/socket_path.h"

namespace warp::expertd {
namespace {

// A client that stops reading its replies must not hold a connection thread
// (and so shutdown) forever.
constexpr int kSendTimeoutSeconds = 10;
// After a failed accept (no descriptor left): wait before the next, and log at most this often.
constexpr int kAcceptBackoffMs = 100;
constexpr auto kLogInterval = std::chrono::seconds(10);

absl::StatusOr<ScopedFd> Listen(const std::string& path, uint32_t mode) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fastpath:", path, ": a Unix socket path needs 1 to 107 bytes"));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  ScopedFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket");
  WARP_RETURN_IF_ERROR(Annotate(ClaimSocketPath(path), "cannot listen on fastpath:" + path));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("bind fastpath:", path));
  }
  ::chmod(path.c_str(), mode);
  if (::listen(fd.get(), SOMAXCONN) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("listen fastpath:", path));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<UdsServer>> UdsServer::Start(const RequestHandler& handler,
                                                            const Options& options) {
  WARP_ASSIGN_OR_RETURN(ScopedFd listener, Listen(options.path, options.socket_mode));
  ScopedFd wake(::eventfd(0, EFD_CLOEXEC));
  ScopedFd reaps(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid() || !reaps.valid()) return ErrnoToStatus(errno, "eventfd");
  return std::unique_ptr<UdsServer>(
      new UdsServer(handler, options, std::move(listener), std::move(wake), std::move(reaps)));
}

UdsServer::UdsServer(const RequestHandler& handler, const Options& options, ScopedFd listener,
                     ScopedFd wake, ScopedFd reaps)
    : handler_(handler),
      options_(options),
      listener_(std::move(listener)),
      wake_(std::move(wake)),
      reaps_(std::move(reaps)),
      spare_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

UdsServer::~UdsServer() { Shutdown(); }

void UdsServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_) return;
    shut_down_ = true;
  }
  const uint64_t one = 1;
  (void)!::write(wake_.get(), &one, sizeof(one));
  accept_thread_.join();
  listener_ = ScopedFd();
  ::unlink(options_.path.c_str());
  // No new clients now; clients_ only shrinks.
  absl::MutexLock lock(&mu_);
  for (Client& client : clients_) client.connection->StopReading();
  for (Client& client : clients_) client.thread.join();
  clients_.clear();  // drops the last leases
}

namespace {

// The soft RLIMIT_NOFILE, read each time: an operator may raise it live.
int DescriptorLimit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY ||
      limit.rlim_cur > INT32_MAX) {
    return INT32_MAX;
  }
  return static_cast<int>(limit.rlim_cur);
}

// The process at the other end of a Unix socket; 0 if unknown.
pid_t PeerProcess(int socket) {
  ucred peer{};
  socklen_t length = sizeof(peer);
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &peer, &length) != 0) return 0;
  return peer.pid;
}

}  // namespace

void UdsServer::AcceptLoop() {
  bool back_off = false;
  while (true) {
    if (back_off) {
      // Only Shutdown may end the wait: the listener would be ready again at once.
      pollfd wake{wake_.get(), POLLIN, 0};
      if (::poll(&wake, 1, kAcceptBackoffMs) > 0) return;
      back_off = false;
    }
    pollfd fds[3] = {
        {listener_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}, {reaps_.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      Logger("expertd.uds").error("poll on fastpath:{}: {}", options_.path, std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;  // Shutdown
    if (fds[2].revents != 0) {        // connections ended: their threads and descriptors go now
      uint64_t ended = 0;
      (void)!::read(reaps_.get(), &ended, sizeof(ended));
      absl::MutexLock lock(&mu_);
      ReapDone();
    }
    if (fds[0].revents != 0) back_off = !Accept();
  }
}

void UdsServer::LogRateLimited(const std::string& what) {
  ++unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_log_ < kLogInterval) return;
  Logger("expertd.uds")
      .warn("fastpath:{}: {} ({} time(s) since the last report)", options_.path, what, unlogged_);
  last_log_ = now;
  unlogged_ = 0;
}

bool UdsServer::Accept() {
  ScopedFd socket(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!socket.valid()) {
    const int error = errno;
    if (error == EINTR || error == ECONNABORTED || error == EAGAIN) return true;
    LogRateLimited(absl::StrCat("accept failed: ", std::strerror(error),
                                "; clients waiting are closed until descriptors are free"));
    {
      absl::MutexLock lock(&mu_);
      ReapDone();  // descriptors of finished connections go back first
    }
    if ((error == EMFILE || error == ENFILE) && spare_.valid()) {
      // The waiting client would sit in the backlog: accept it on the spare
      // descriptor and close it, so it sees the connection end now.
      spare_ = ScopedFd();
      ScopedFd shed(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      shed = ScopedFd();
      spare_ = ScopedFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    }
    return false;
  }
  // Descriptors are numbered lowest first: one this high means the fast path
  // would take the last ones gRPC needs to accept (upstream gRPC's listener
  // does not recover from running out; docs/RELIABILITY.md).
  if (socket.get() >= DescriptorLimit() - kReservedDescriptors) {
    Refuse(std::move(socket),
           absl::StrCat("keeps its last ", kReservedDescriptors,
                        " file descriptors for gRPC and its banks; retry later"));
    return true;
  }
  const timeval timeout{.tv_sec = kSendTimeoutSeconds, .tv_usec = 0};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  const pid_t peer = PeerProcess(socket.get());
  std::string refusal;
  {
    absl::MutexLock lock(&mu_);
    ReapDone();
    const size_t open = clients_.size();
    size_t from_peer = 0;
    for (const Client& client : clients_) from_peer += client.peer == peer;
    // Half the maximum (at least 16, or all of a smaller one): a process
    // that hoards connections leaves the others room.
    const size_t per_process =
        std::max(options_.max_connections / 2, std::min<size_t>(options_.max_connections, 16));
    if (open >= options_.max_connections) {
      refusal = absl::StrCat("serves ", open, " connections, its maximum (max_fastpath_connections)");
    } else if (peer > 0 && from_peer >= per_process) {
      refusal = absl::StrCat("serves ", from_peer, " connections of process ", peer,
                             ", the most one process may hold (half of "
                             "max_fastpath_connections)");
    } else {
      Client& client = clients_.emplace_back();
      client.peer = peer;
      client.connection =
          std::make_unique<UdsConnection>(std::move(socket), handler_, options_.connection);
      client.thread = std::thread([this, &client] {
        client.connection->Serve();
        client.done.store(true);
        const uint64_t one = 1;
        (void)!::write(reaps_.get(), &one, sizeof(one));
      });
      return true;
    }
  }
  Refuse(std::move(socket), refusal);
  return true;
}

void UdsServer::Refuse(ScopedFd socket, const std::string& why) {
  v1::FastPathReply reply;
  *reply.mutable_hello()->mutable_status() = ToProto(
      absl::ResourceExhaustedError(absl::StrCat("expertd fastpath:", options_.path, " ", why)));
  // The client's Hello is not read: the reply is all it needs to give up.
  (void)SendFastPathFrame(socket.get(), EncodeFastPathFrame(reply));
  ::shutdown(socket.get(), SHUT_RDWR);
  LogRateLimited(absl::StrCat("refused a client: ", why));
}

void UdsServer::ReapDone() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (it->done.load()) {
      it->thread.join();
      it = clients_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace warp::expertd
