#include "expertd/socket_path.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp::expertd {

absl::Status ClaimSocketPath(const std::string& path) {
  struct stat st;
  // bind() would fail later with a message that reads like "address in use".
  const std::string dir = std::filesystem::path(path).parent_path().string();
  if (!dir.empty() && (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    return absl::NotFoundError(
        absl::StrCat(path, ": the directory ", dir, " does not exist (create it first)"));
  }
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return absl::OkStatus();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": socket path too long"));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoToStatus(errno, path);
  const bool live =
      ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0;
  ::close(fd);
  if (live) {
    return absl::FailedPreconditionError(
        "already served by another expertd (a process accepts connections on it); stop it "
        "first or choose another --listen");
  }
  ::unlink(path.c_str());  // stale: nobody accepts on it
  return absl::OkStatus();
}

absl::Status ProbeTcpListen(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return absl::OkStatus();
  std::string host = host_port.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const std::string port = host_port.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found) != 0) {
    return absl::OkStatus();  // gRPC's own message stands
  }
  absl::Status status;
  for (addrinfo* a = found; a != nullptr && status.ok(); a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0) {
      if (errno == EADDRINUSE) {
        status = absl::FailedPreconditionError(
            "the port is in use (another expertd, or another program, listens there); stop it "
            "first or choose another --listen");
      } else if (errno == EACCES) {
        status = absl::PermissionDeniedError(
            "no permission to listen there (a port below 1024 needs CAP_NET_BIND_SERVICE)");
      } else if (errno == EADDRNOTAVAIL) {
        status = absl::FailedPreconditionError("no interface of this machine has that address");
      }
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return status;
}

}  // namespace warp::expertd
