#pragma once

// PromptCache: what a session's KV cache holds, as token ids, so that the
// next prompt prefills only what differs. A prompt keeps the longest prefix
// the cache already holds (as far as every layer can rewind: a sliding
// window or a recurrent state may send it further back) and prefills the
// rest — a chat turn, or a server request that shares its system prompt with
// the one before, costs its new tokens only. With a DiskPromptCache, a
// longer prefix found on disk is loaded into the sequence first, and
// SaveToDisk stores what the sequence holds (a prompt's end, a reply's end).

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/run/disk_prompt_cache.h"
#include "computed/run/session.h"

namespace warp::computed {

// Thread-compatible; the session must outlive it, and nothing else may move
// the session's position between its calls except the decode loop feeding
// tokens through Fed.
class PromptCache {
 public:
  // Caches what `sequence` of the session holds.
  explicit PromptCache(Session& session, uint32_t sequence = 0,
                       DiskPromptCache* disk = nullptr)
      : session_(session), sequence_(sequence), disk_(disk) {}

  // Brings the KV cache to exactly `ids` and returns the last position's
  // logits. `reserve` positions must remain free after it (the reply):
  // ResourceExhausted, naming `what` ("the conversation", "the prompt"), with
  // the KV cache as it was, when they do not or when `ids` reaches past the
  // model's trained positions.
  absl::StatusOr<std::vector<float>> BringUpTo(std::span<const int32_t> ids, uint32_t reserve,
                                               const std::string& what);

  // BringUpTo's first half, for a caller that prefills in steps of its own
  // (serve, beside other requests' decode steps): the same checks, then the
  // longest prefix of `ids` the KV cache can keep is kept (the sequence
  // rewound to it) and its length returned. The caller then runs the rest
  // through the sequence, calling Fed for each token in it and the session's
  // Checkpoint right before the last one, as BringUpTo does.
  absl::StatusOr<size_t> Keep(std::span<const int32_t> ids, uint32_t reserve,
                              const std::string& what);

  // A generated token the decode loop stepped: now in the KV cache.
  void Fed(int32_t id) { in_cache_.push_back(id); }
  // Queues the sequence's state, as the prefix it holds, for the disk cache
  // (none: nothing); the next prompt that starts with it loads it.
  void SaveToDisk();
  // Forgets everything (a failed forward leaves the cache unknown).
  void Clear() { in_cache_.clear(); }

  // How many leading tokens of `ids` the cache holds (what BringUpTo would
  // keep, before a rewind sends it further back).
  size_t SharedPrefix(std::span<const int32_t> ids) const;
  uint32_t sequence() const { return sequence_; }
  uint32_t reused_tokens() const { return reused_; }  // of the last BringUpTo or Keep
  uint32_t new_tokens() const { return new_; }
  uint32_t disk_tokens() const { return from_disk_; }  // of reused_tokens, loaded from disk

 private:
  // Loads the longest entry of the disk cache that starts `ids` and holds
  // more than the `shared` tokens the sequence already does; the new shared
  // count (a refused entry leaves the sequence empty: 0).
  size_t LoadFromDisk(std::span<const int32_t> ids, size_t shared);

  Session& session_;
  const uint32_t sequence_;
  DiskPromptCache* const disk_;
  std::vector<int32_t> in_cache_;  // the ids at KV positions 0 .. size-1
  uint32_t reused_ = 0;
  uint32_t new_ = 0;
  uint32_t from_disk_ = 0;
};

}  // namespace warp::computed
