#pragma once

// Status helpers: the WARP_ propagation macros (open-source Abseil ships none)
// and errno conversion that names the file or extent that failed.

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define WARP_STATUS_CONCAT_INNER(a, b) a##b
#define WARP_STATUS_CONCAT(a, b) WARP_STATUS_CONCAT_INNER(a, b)

#define WARP_RETURN_IF_ERROR(expr)                                \
  do {                                                            \
    if (absl::Status warp_status_ = (expr); !warp_status_.ok()) { \
      return warp_status_;                                        \
    }                                                             \
  } while (0)

#define WARP_ASSIGN_OR_RETURN(lhs, expr) \
  WARP_ASSIGN_OR_RETURN_IMPL(WARP_STATUS_CONCAT(warp_statusor_, __LINE__), lhs, expr)

#define WARP_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

namespace warp {

// Maps errno to a canonical status code; the message is "`context`: strerror".
absl::Status ErrnoToStatus(int err, std::string_view context);

// Returns `status` with "`context`: " prepended to its message (code kept).
absl::Status Annotate(const absl::Status& status, std::string_view context);

}  // namespace warp
