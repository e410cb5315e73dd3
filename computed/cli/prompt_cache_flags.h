#pragma once

// --prompt-cache-dir and --prompt-cache-size, shared by the commands that
// keep conversations (chat, serve): the disk prompt cache they name
// (run/disk_prompt_cache.h).

#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "computed/run/disk_prompt_cache.h"
#include "computed/run/session.h"

namespace warp::computed {

struct PromptCacheFlags {
  std::string dir;           // empty: no disk cache
  std::string size = "20G";  // the bound on what the directory holds of this model
};

void AddPromptCacheFlags(CLI::App* cmd, PromptCacheFlags& flags);

// The cache the flags name for `session`'s states; null without a directory.
// Errors name the flag.
absl::StatusOr<std::unique_ptr<DiskPromptCache>> OpenPromptCache(const PromptCacheFlags& flags,
                                                                 const Session& session);

}  // namespace warp::computed
