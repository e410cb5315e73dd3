#include "common/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp {

ScopedFd& ScopedFd::operator=(ScopedFd&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

ScopedFd::~ScopedFd() {
  if (fd_ >= 0) ::close(fd_);
}

int ScopedFd::release() {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

namespace {

absl::StatusOr<OpenedFile> OpenWithFallback(const std::filesystem::path& path, int flags,
                                            bool want_direct) {
  if (want_direct) {
    const int fd = ::open(path.c_str(), flags | O_DIRECT | O_CLOEXEC, 0644);
    if (fd >= 0) return OpenedFile{ScopedFd(fd), true};
    // EINVAL: the filesystem does not support O_DIRECT; fall back to buffered I/O.
    if (errno != EINVAL) return ErrnoToStatus(errno, path.string());
  }
  const int fd = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, path.string());
  return OpenedFile{ScopedFd(fd), false};
}

const char* FileKind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "something else";
}

}  // namespace

absl::StatusOr<OpenedFile> OpenForRead(const std::filesystem::path& path, bool want_direct) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever. It
  // changes nothing for a regular file, the only kind read here.
  WARP_ASSIGN_OR_RETURN(OpenedFile file,
                        OpenWithFallback(path, O_RDONLY | O_NONBLOCK, want_direct));
  struct stat info {};
  if (::fstat(file.fd.get(), &info) != 0) return ErrnoToStatus(errno, path.string());
  if (!S_ISREG(info.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path.string(), ": is ", FileKind(info.st_mode), ", not a regular file"));
  }
  ::fcntl(file.fd.get(), F_SETFL, ::fcntl(file.fd.get(), F_GETFL) & ~O_NONBLOCK);
  return file;
}

absl::StatusOr<OpenedFile> OpenForWrite(const std::filesystem::path& path, bool want_direct) {
  return OpenWithFallback(path, O_WRONLY | O_CREAT | O_TRUNC, want_direct);
}

absl::Status PreadFull(int fd, std::span<std::byte> out, uint64_t offset, std::string_view path) {
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = ::pread(fd, out.data() + done, out.size() - done, offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat(std::string(path), " @", offset + done));
    }
    if (n == 0) {
      return absl::DataLossError(absl::StrCat(std::string(path), ": short read at ", offset,
                                              ": got ", done, " of ", out.size(), " bytes"));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status PwriteFull(int fd, std::span<const std::byte> data, uint64_t offset,
                        std::string_view path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::pwrite(fd, data.data() + done, data.size() - done, offset + done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoToStatus(errno, absl::StrCat(std::string(path), " @", offset + done));
    }
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> FileSize(int fd, std::string_view path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoToStatus(errno, path);
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<std::string> ReadFileToString(const std::filesystem::path& path) {
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/false));
  WARP_ASSIGN_OR_RETURN(uint64_t size, FileSize(file.fd.get(), path.string()));
  std::string contents(size, '\0');
  WARP_RETURN_IF_ERROR(
      PreadFull(file.fd.get(), std::as_writable_bytes(std::span(contents)), 0, path.string()));
  return contents;
}

absl::Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents,
                                 std::string_view temp_suffix) {
  const std::filesystem::path tmp = path.string() + std::string(temp_suffix);
  absl::Status status = [&]() -> absl::Status {
    WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForWrite(tmp, /*want_direct=*/false));
    WARP_RETURN_IF_ERROR(
        PwriteFull(file.fd.get(), std::as_bytes(std::span(contents)), 0, tmp.string()));
    if (::fsync(file.fd.get()) != 0) return ErrnoToStatus(errno, tmp.string());
    return absl::OkStatus();
  }();
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoToStatus(errno, path.string());
  }
  if (!status.ok()) ::unlink(tmp.c_str());  // a partial file is no use to a rerun
  return status;
}

}  // namespace warp
