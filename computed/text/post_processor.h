#pragma once

// tokenizer.json post-processors for a single sequence: TemplateProcessing
// (e.g. "<s> $A"), ByteLevel (offsets only, so ids pass unchanged) and
// Sequence. Applied only when encoding with add_special_tokens.
//
// Immutable after parsing; safe from any number of threads.

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/json_fields.h"

namespace warp::text {

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual std::vector<int32_t> Process(std::vector<int32_t> ids) const = 0;
};

// nullptr for JSON null. `path` names `config` in errors ("post_processor").
absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const Json& config,
                                                                  std::string_view path);

}  // namespace warp::text
