#pragma once

// DiskPromptCache: the states of prompt prefixes on disk (--prompt-cache-dir,
// --prompt-cache-size), so that a prompt that repeats — an agent's next turn,
// the same conversation after a restart — prefills only its new tokens.
//
// An entry is one file, DIR/HASH.wpc: a header (magic, version, the state's
// key — the model's fingerprint, the context, the activations — and sizes),
// the prefix's token ids, the sequence's state (Transformer::SaveSequence),
// and a CRC32C of everything before it. Entries are written whole through a
// temporary file and a rename, by a writer thread, so a reader never sees
// half of one. An entry is used only when every check passes; a corrupt,
// truncated or foreign one is logged, deleted and recomputed. Past the size
// bound the least recently used entries go (use is the file's mtime, so it
// survives restarts). A write that fails (a full disk) is logged and dropped:
// the cache degrades to none, and the run goes on.
//
// Thread-safe.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::computed {

struct DiskPromptCacheOptions {
  std::filesystem::path dir;
  uint64_t max_bytes = 0;
  // What a state is valid for: entries of another key are not this model's.
  std::string key;
};

struct DiskPromptCacheStats {
  uint64_t hits = 0, misses = 0;  // lookups that found an entry, and those that did not
  uint64_t hit_tokens = 0;        // the prefix tokens the hits brought
  uint64_t writes = 0, write_failures = 0, refused = 0, evictions = 0;
  uint64_t dropped = 0;  // queued writes dropped for newer ones (the queue holds two states)
  uint64_t entries = 0, bytes = 0;  // what the directory holds of this key
};

class DiskPromptCache {
 public:
  // Creates the directory if needed and reads the headers of its entries.
  static absl::StatusOr<std::unique_ptr<DiskPromptCache>> Open(DiskPromptCacheOptions options);
  ~DiskPromptCache();  // writes what is queued

  struct Hit {
    std::vector<int32_t> ids;  // the prefix, a prefix of what was asked
    std::string state;
  };
  // The longest entry whose ids are a prefix of `ids` of more than
  // `longer_than` tokens, checked whole; nullopt when there is none.
  std::optional<Hit> Lookup(std::span<const int32_t> ids, size_t longer_than);

  // Queues the state of the prefix `ids` to be written (dropped when an entry
  // holds the same ids, or when it alone is past the size bound).
  void Store(std::vector<int32_t> ids, std::string state);
  // Whether an entry holds exactly `ids` (it counts as used): a caller skips
  // serializing a state the cache has.
  bool Holds(std::span<const int32_t> ids);
  // Removes the entry of `ids` with a log line naming `why`: its state did
  // not load (Transformer::LoadSequence refused it).
  void Refuse(std::span<const int32_t> ids, const absl::Status& why);
  // Waits until every queued entry is written or dropped.
  void Flush();

  DiskPromptCacheStats stats() const;
  const std::filesystem::path& dir() const { return options_.dir; }

 private:
  struct Entry {
    std::filesystem::path path;
    std::vector<int32_t> ids;
    uint64_t bytes = 0;
    int64_t used = 0;  // the file's mtime, seconds and nanoseconds as one count
  };
  explicit DiskPromptCache(DiskPromptCacheOptions options);
  void Scan();
  void WriteLoop();
  void Write(std::vector<int32_t> ids, std::string state);
  void EvictLocked();
  // Reads and checks `entry`'s file: its state, or why it is refused.
  absl::StatusOr<std::string> ReadEntry(const Entry& entry) const;
  void Refuse(const Entry& entry, const absl::Status& why);  // under mutex_
  void Forget(const std::filesystem::path& path);             // under mutex_: out of the index
  std::filesystem::path PathOf(std::span<const int32_t> ids) const;

  const DiskPromptCacheOptions options_;
  mutable std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::vector<Entry> entries_;  // guarded by mutex_
  struct Pending {
    std::vector<int32_t> ids;
    std::string state;
  };
  std::deque<Pending> queue_;   // guarded by mutex_
  bool writing_ = false;        // guarded by mutex_
  bool stopping_ = false;       // guarded by mutex_
  DiskPromptCacheStats stats_;  // guarded by mutex_
  std::atomic<uint64_t> temp_counter_{0};
  std::thread writer_;
};

// The bytes of an entry file (exposed for tests that corrupt one).
std::string EncodePromptCacheEntry(std::string_view key, std::span<const int32_t> ids,
                                   std::string_view state);

}  // namespace warp::computed
