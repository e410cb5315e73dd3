#pragma once

// Thin, error-naming wrappers over POSIX file I/O: an owning descriptor, full
// preads/pwrites that retry on EINTR and short transfers, and O_DIRECT opens
// with a buffered fallback for filesystems (tmpfs) that refuse it.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "absl/status/statusor.h"

namespace warp {

// Owns one file descriptor. Thread-compatible; pread/pwrite on it are thread-safe.
class ScopedFd {
 public:
  ScopedFd() = default;
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(ScopedFd&& other) noexcept : fd_(other.release()) {}
  ScopedFd& operator=(ScopedFd&& other) noexcept;
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();

 private:
  int fd_ = -1;
};

struct OpenedFile {
  ScopedFd fd;
  bool direct = false;  // true if opened with O_DIRECT
};

// Opens `path` read-only, with O_DIRECT when `want_direct` and the filesystem
// allows it. Errors name the path.
absl::StatusOr<OpenedFile> OpenForRead(const std::filesystem::path& path, bool want_direct);

// Creates or truncates `path` for writing, with O_DIRECT when `want_direct`
// and the filesystem allows it.
absl::StatusOr<OpenedFile> OpenForWrite(const std::filesystem::path& path, bool want_direct);

// Reads exactly out.size() bytes at `offset`. A file that ends first is
// DataLoss "PATH: short read at OFFSET: got N of M bytes".
absl::Status PreadFull(int fd, std::span<std::byte> out, uint64_t offset, std::string_view path);

// Writes all of `data` at `offset`.
absl::Status PwriteFull(int fd, std::span<const std::byte> data, uint64_t offset,
                        std::string_view path);

absl::StatusOr<uint64_t> FileSize(int fd, std::string_view path);

absl::StatusOr<std::string> ReadFileToString(const std::filesystem::path& path);

// Writes `contents` to `path` through a temporary file (`path` +
// `temp_suffix`) and rename, so a reader never sees a half-written file. A
// suffix of its own lets writers of one directory never share a temp file.
absl::Status WriteFileAtomically(const std::filesystem::path& path, std::string_view contents,
                                 std::string_view temp_suffix = ".tmp");

}  // namespace warp
