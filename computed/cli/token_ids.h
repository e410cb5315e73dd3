#pragma once

// Token ids on the command line: "1,2,3".

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::computed {

// `flag` names the option in errors, e.g. "--tokens".
absl::StatusOr<std::vector<int32_t>> ParseTokenIds(const std::string& text, std::string_view flag);

std::string FormatTokenIds(const std::vector<int32_t>& ids);

}  // namespace warp::computed
