#include "computed/cli/token_ids.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace warp::computed {

absl::StatusOr<std::vector<int32_t>> ParseTokenIds(const std::string& text, std::string_view flag) {
  std::vector<int32_t> tokens;
  for (absl::string_view piece : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int32_t token;
    if (!absl::SimpleAtoi(piece, &token) || token < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(flag), ": \"", std::string(piece), "\" is not a token id"));
    }
    tokens.push_back(token);
  }
  if (tokens.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(flag), ": no token ids given"));
  }
  return tokens;
}

std::string FormatTokenIds(const std::vector<int32_t>& ids) { return absl::StrJoin(ids, ","); }

}  // namespace warp::computed
