#include "expertd/probe.h"

#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kScratchBytes = uint64_t{256} << 20;
constexpr uint64_t kWriteBytes = uint64_t{8} << 20;

absl::Status WriteScratch(const fs::path& path) {
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForWrite(path, /*want_direct=*/true));
  AlignedBuffer buffer(kWriteBytes);
  for (uint64_t offset = 0; offset < kScratchBytes; offset += kWriteBytes) {
    buffer.data()[0] = static_cast<std::byte>(offset >> 20);  // not all zero pages
    WARP_RETURN_IF_ERROR(PwriteFull(file.fd.get(), buffer.span(), offset, path.string()));
  }
  if (::fdatasync(file.fd.get()) != 0) return ErrnoToStatus(errno, path.string());
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DiskProbe> ProbeDirectory(const fs::path& dir) {
  if (!fs::is_directory(dir)) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": not a directory"));
  }
  const fs::path scratch = dir / absl::StrCat(".expertd-probe-", ::getpid());
  absl::Status written = WriteScratch(scratch);
  absl::StatusOr<DiskProbe> probe =
      written.ok() ? ProbeDiskReads({scratch}, {.max_bytes = kScratchBytes, .max_seconds = 2})
                   : absl::StatusOr<DiskProbe>(written);
  std::error_code ignored;
  fs::remove(scratch, ignored);
  return probe;
}

}  // namespace warp::expertd
