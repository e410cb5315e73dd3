#include "expertd/socket_path.h"

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
    return absl::FailedPreconditionError("a running daemon already listens on this socket");
  }
  ::unlink(path.c_str());  // stale: nobody accepts on it
  return absl::OkStatus();
}

}  // namespace warp::expertd
