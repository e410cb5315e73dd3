#pragma once

// The `pattern` of Split / Replace components: {"String": "..."} (a literal)
// or {"Regex": "..."} (an Oniguruma-syntax regex, compiled with PCRE2).
//
// Immutable after FromJson; safe to use from any number of threads.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/json_fields.h"
#include "computed/text/regex.h"

namespace warp::text {

class TextPattern {
 public:
  static absl::StatusOr<TextPattern> FromJson(const Json& pattern, std::string_view path);
  // The required "pattern" field of the component `config` at `path`.
  static absl::StatusOr<TextPattern> FromField(const Json& config, std::string_view path);
  static absl::StatusOr<TextPattern> Literal(std::string literal);

  // Non-overlapping occurrences, left to right. An empty literal never matches.
  absl::StatusOr<std::vector<Match>> FindAll(std::string_view text) const;

  absl::StatusOr<std::string> ReplaceAll(std::string_view text, std::string_view content) const;

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;  // shared: TextPattern is copyable, Regex is not
};

}  // namespace warp::text
