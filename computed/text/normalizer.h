#pragma once

// tokenizer.json normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Replace,
// Prepend, Strip and Sequence, with Hugging Face's semantics. Applied to each
// stretch of text between added tokens. As in the Rust crate (unlike the JS
// port), Prepend leaves an empty text empty.
//
// Immutable after parsing; Normalize is safe from any number of threads.

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "computed/text/json_fields.h"

namespace warp::text {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // REQUIRES: `text` is valid UTF-8. Fails only if a regex match fails.
  virtual absl::StatusOr<std::string> Normalize(std::string_view text) const = 0;
};

// nullptr for JSON null. `path` names `config` in errors ("normalizer").
absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& config,
                                                            std::string_view path);

}  // namespace warp::text
