#pragma once

// ModelState: what a warp_model is — the container's text layer (tokenizer,
// chat template, end-of-text ids) and the SessionOptions each of its sessions
// opens with. Holds no weights: a session loads its own.
//
// Immutable after OpenModel: every method is safe from any number of threads.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/api/warp.h"
#include "computed/run/disk_prompt_cache.h"
#include "computed/run/model_text.h"
#include "computed/run/session.h"
#include "nlohmann/json.hpp"

namespace warp::api {

class ModelState {
 public:
  // Checks the options and the container (NotFound for a path that is not
  // there, InvalidArgument for one that is not a container), then loads the
  // text layer. `options` has been widened to the library's struct size.
  static absl::StatusOr<std::shared_ptr<const ModelState>> Open(const warp_model_options& options);

  absl::StatusOr<std::vector<int32_t>> Tokenize(std::string_view text,
                                                bool add_special_tokens) const;
  absl::StatusOr<std::string> Detokenize(std::span<const int32_t> ids,
                                         bool skip_special_tokens) const;
  absl::StatusOr<std::string> ApplyChatTemplate(std::string_view messages_json,
                                                bool add_generation_prompt, const char* tools_json,
                                                const char* template_kwargs_json) const;

  const computed::SessionOptions& session_options() const { return session_options_; }
  // Null for a model without a tokenizer (token ids only).
  const computed::ModelText* text() const { return text_ ? &*text_ : nullptr; }
  uint32_t vocab_size() const { return vocab_size_; }  // the model's, as prefill checks
  // The prompt cache on disk of options.prompt_cache_dir, one for all the
  // model's sessions (their states share `key`), opened at the first call;
  // null without a directory. Thread-safe.
  absl::StatusOr<std::shared_ptr<computed::DiskPromptCache>> PromptCache(
      const std::string& key) const;

 private:
  ModelState() = default;
  // FailedPrecondition naming the model when it has no tokenizer.
  absl::StatusOr<const computed::ModelText*> RequireText() const;

  computed::SessionOptions session_options_;
  std::optional<computed::ModelText> text_;
  uint32_t vocab_size_ = 0;
  std::string prompt_cache_dir_;
  uint64_t prompt_cache_bytes_ = 0;
  mutable std::mutex prompt_cache_mutex_;
  mutable std::shared_ptr<computed::DiskPromptCache> prompt_cache_;  // guarded by the mutex
};

}  // namespace warp::api
