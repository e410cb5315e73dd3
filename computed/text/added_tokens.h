#pragma once

// Added tokens (tokenizer.json "added_tokens", tiktoken special tokens) and
// the matcher that cuts them out of a text before anything else sees it, as
// Hugging Face's AddedVocabulary does: at the leftmost position where any
// token matches, the longest one wins; single_word tokens only match between
// non-word characters; lstrip / rstrip tokens swallow the whitespace beside
// them.
//
// Immutable after construction; Split is safe from any number of threads.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace warp::text {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;  // matched in normalized text rather than raw text
};

// A stretch of a split text: plain text, or one added token.
struct TextSegment {
  std::string_view text;  // for a token, what it matched (with stripped spaces)
  size_t offset = 0;      // of `text` in the split text
  int32_t token_id = -1;  // >= 0 for an added token
};

class AddedTokenMatcher {
 public:
  struct Entry {
    std::string pattern;  // the text to find (the content, or its normalized form)
    AddedToken token;
  };
  explicit AddedTokenMatcher(std::vector<Entry> entries);

  bool empty() const { return entries_.empty(); }

  // `text` as alternating plain segments (never empty) and token segments.
  std::vector<TextSegment> Split(std::string_view text) const;

 private:
  // Index into entries_ of the longest pattern at text[pos], or -1; sets *length.
  int32_t LongestMatch(std::string_view text, size_t pos, size_t* length) const;

  std::vector<Entry> entries_;
  // A byte trie of the patterns: edges keyed by node * 256 + byte.
  absl::flat_hash_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> node_entry_;      // by node: the entry ending there, or -1
  std::array<bool, 256> first_bytes_{};  // bytes some pattern starts with
};

}  // namespace warp::text
