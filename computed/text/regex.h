#pragma once

// A compiled PCRE2 pattern (UTF + UCP, JIT-compiled when the library has a
// JIT), translated first from the tokenizer's regex dialect
// (regex_translate.h). Owns the pcre2_code; the match data and JIT stack
// are per call / per thread, so one Regex serves any number of threads.
//
// Immutable after Compile; FindAll is safe to call from any number of threads.

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/regex_translate.h"

namespace warp::text {

struct Match {
  size_t begin = 0;  // byte offsets into the searched text
  size_t end = 0;
};

class Regex {
 public:
  // InvalidArgument naming the pattern and the offset of a syntax error.
  static absl::StatusOr<std::unique_ptr<Regex>> Compile(std::string_view pattern,
                                                        RegexDialect dialect);
  ~Regex();
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Non-overlapping matches, left to right. After an empty match the search
  // resumes one character later (as Oniguruma, Rust and JS iterate).
  // REQUIRES: `text` is valid UTF-8 (not re-checked: PCRE2_NO_UTF_CHECK).
  absl::StatusOr<std::vector<Match>> FindAll(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  Regex(std::string pattern, void* code) : pattern_(std::move(pattern)), code_(code) {}

  std::string pattern_;  // as written in the tokenizer file
  void* code_;           // pcre2_code_8*, kept opaque to spare includers pcre2.h
};

}  // namespace warp::text
