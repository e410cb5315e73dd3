#include "common/status.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warp {
namespace {

absl::StatusCode ErrnoToCode(int err) {
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::StatusCode::kNotFound;
    case EACCES:
    case EPERM:
      return absl::StatusCode::kPermissionDenied;
    case EEXIST:
      return absl::StatusCode::kAlreadyExists;
    case EINVAL:
    case ENAMETOOLONG:
      return absl::StatusCode::kInvalidArgument;
    case ENOSPC:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return absl::StatusCode::kResourceExhausted;
    case EAGAIN:
    case EINTR:
    case EBUSY:
      return absl::StatusCode::kUnavailable;
    case EIO:  // the device failed the read: environmental, may succeed elsewhere or later
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status ErrnoToStatus(int err, std::string_view context) {
  return absl::Status(ErrnoToCode(err),
                      absl::StrCat(std::string(context), ": ", std::strerror(err)));
}

absl::Status Annotate(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(std::string(context), ": ", status.message()));
}

}  // namespace warp
