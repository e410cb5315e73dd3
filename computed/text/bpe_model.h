#pragma once

// The BPE model of a tokenizer.json: vocab, ranked merges and the Hugging Face
// options (byte_fallback, unk_token / fuse_unk, ignore_merges,
// continuing_subword_prefix, end_of_word_suffix). Encodes one pre-token at a
// time with the standard symbol list + priority queue: the pair with the
// lowest merge rank merges first, the leftmost among equals, exactly as
// tokenizers' Word::merge_all.
//
// Thread-safe: immutable after Create except the per-piece cache, which
// its mutex guards.

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "computed/text/json_fields.h"
#include "computed/text/string_map.h"
#include "computed/text/tokenizer_json.h"

namespace warp::text {

class BpeModel {
 public:
  // `model` holds the options; `tables` the vocab and merges, taken out of
  // it by ParseTokenizerJson. `path` names `model` in errors ("model"). Fails
  // on merges naming tokens not in the vocab, dropout other than null, and
  // options of the wrong type.
  static absl::StatusOr<std::unique_ptr<BpeModel>> Create(const Json& model, BpeTables tables,
                                                          std::string_view path);

  // Appends the ids of one pre-token `piece` (valid UTF-8) to `ids`.
  void Encode(std::string_view piece, std::vector<int32_t>& ids) const;

  std::optional<int32_t> TokenToId(std::string_view token) const;
  // nullptr if no vocab token has `id`.
  const std::string* IdToToken(int32_t id) const;
  int32_t vocab_size() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  struct MergeResult {
    int32_t rank;
    int32_t id;
  };
  struct Symbol {
    int32_t id;  // -1 once merged into its left neighbour
    int32_t prev;
    int32_t next;
  };
  struct Options {
    bool byte_fallback = false;
    bool fuse_unk = false;
    bool ignore_merges = false;
    std::optional<int32_t> unk_id;
    std::string continuing_subword_prefix;
    std::string end_of_word_suffix;
  };

  BpeModel() = default;
  absl::Status SetVocab(std::vector<std::pair<std::string, int64_t>> vocab, std::string_view path);
  absl::Status SetMerges(const std::vector<std::pair<std::string, std::string>>& merges,
                         std::string_view path);
  absl::Status ParseOptions(const Json& model, std::string_view path);

  static uint64_t PairKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  const MergeResult* FindMerge(int32_t left, int32_t right) const;
  std::vector<Symbol> InitialSymbols(std::string_view piece) const;
  void MergeAll(std::vector<Symbol>& symbols) const;
  std::vector<int32_t> EncodeUncached(std::string_view piece) const;

  std::vector<std::string> id_to_token_;  // sized once: token_to_id_ points into it
  std::vector<bool> has_token_;           // by id: holes in the id space have none
  absl::flat_hash_map<std::string_view, int32_t, StringViewHash, StringViewEq> token_to_id_;
  absl::flat_hash_map<uint64_t, MergeResult> merges_;
  std::array<int32_t, 256> byte_ids_;  // "<0xXX>" tokens for byte_fallback, -1 if absent
  Options options_;

  static constexpr size_t kMaxIdSlack = 1 << 16;   // holes allowed in the id space
  static constexpr size_t kCacheCapacity = 10000;  // as tokenizers' BPE cache
  static constexpr size_t kMaxCachedPieceBytes = 256;
  mutable absl::Mutex mu_;
  mutable StringMap<std::vector<int32_t>> cache_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warp::text
