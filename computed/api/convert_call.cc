#include "computed/api/convert_call.h"

#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "computed/convert/converter.h"

namespace warp::api {
namespace {

// `value` (NULL: the first of `allowed`) if it is one of them.
absl::Status Choose(const char* field, const char* value,
                    std::initializer_list<const char*> allowed, std::string& out) {
  out = value != nullptr ? value : *allowed.begin();
  for (const char* name : allowed) {
    if (out == name) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("options.", field, ": \"", out, "\" is not ", absl::StrJoin(allowed, ", ")));
}

absl::Status Required(const char* field, const char* value) {
  if (value == nullptr)
    return absl::InvalidArgumentError(absl::StrCat("options.", field, " is NULL"));
  if (*value == '\0')
    return absl::InvalidArgumentError(absl::StrCat("options.", field, " is empty"));
  return absl::OkStatus();
}

}  // namespace

absl::Status Convert(const warp_convert_options& options) {
  WARP_RETURN_IF_ERROR(Required("source", options.source));
  WARP_RETURN_IF_ERROR(Required("out", options.out));
  computed::ConvertOptions convert{.early_route_folds = options.early_route_folds != 0,
                                   .direct_io = options.direct_io != 0,
                                   .show_progress = false};
  WARP_RETURN_IF_ERROR(
      Choose("experts", options.experts, {"native", "q8", "q4", "vq3r"}, convert.experts));
  WARP_RETURN_IF_ERROR(Choose("trunk", options.trunk, {"native", "bf16", "q8", "q4", "mixed"}, convert.trunk));
  return computed::ConvertCheckpoint(options.source, options.out, convert).status();
}

}  // namespace warp::api
