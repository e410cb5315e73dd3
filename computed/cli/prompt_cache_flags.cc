#include "computed/cli/prompt_cache_flags.h"

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"

namespace warp::computed {

void AddPromptCacheFlags(CLI::App* cmd, PromptCacheFlags& flags) {
  cmd->add_option("--prompt-cache-dir", flags.dir,
                  "Keep the states of prompts in DIR, so that a prompt that repeats (the next "
                  "turn, after a restart) prefills only its new tokens");
  cmd->add_option("--prompt-cache-size", flags.size,
                  "What --prompt-cache-dir may hold of this model; the least recently used "
                  "entries go first")
      ->capture_default_str();
}

absl::StatusOr<std::unique_ptr<DiskPromptCache>> OpenPromptCache(const PromptCacheFlags& flags,
                                                                 const Session& session) {
  if (flags.dir.empty()) return nullptr;
  absl::StatusOr<uint64_t> bytes = ParseByteSize(flags.size);
  if (!bytes.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prompt-cache-size ", flags.size, ": ", bytes.status().message()));
  }
  return DiskPromptCache::Open({.dir = flags.dir, .max_bytes = *bytes, .key = session.state_key()});
}

}  // namespace warp::computed
