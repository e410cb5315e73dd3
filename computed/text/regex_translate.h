#pragma once

// Rewrites a pattern written for the engine a tokenizer was made with into
// PCRE2 syntax with the same meaning. Hugging Face tokenizers compile
// tokenizer.json patterns with Oniguruma; tiktoken uses Rust's regex (through
// fancy-regex). What differs from PCRE2, and how it is rewritten:
//   - class intersection and nested classes, which PCRE2 lacks:
//       [\p{Lu}\p{Lo}&&[^\p{Han}]]  ->  (?:(?=[^\p{Han}])[\p{Lu}\p{Lo}])
//       [a[bc]]                     ->  (?:[a]|[bc])
//       [^a[bc]]                    ->  (?:(?!(?:[a]|[bc]))(?s:.))
//   - \s and \S mean Unicode White_Space in both engines; PCRE2's UCP \s also
//     takes U+180E, so they become \p{White_Space} / \P{White_Space};
//   - \w (outside a class, or inside one) becomes the engine's Unicode word set;
//   - Oniguruma's \h / \H are hex digits (in PCRE2 horizontal space).
// Anchors (^ $) are handled by compile options (regex.h), not here.

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace warp::text {

enum class RegexDialect {
  kOniguruma,  // tokenizer.json: ^ and $ match at line breaks
  kRust,       // tiktoken: ^ and $ match only at the ends of the text
};

// InvalidArgument naming the pattern and the offset on malformed classes.
absl::StatusOr<std::string> TranslateRegex(std::string_view pattern, RegexDialect dialect);

}  // namespace warp::text
