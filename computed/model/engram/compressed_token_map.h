#pragma once

// DeepSeek V4.1's compressed token map: every token id onto a smaller id
// space where tokens that normalize alike ("The", " the", "THE") share an id.
// The engram hashes n-grams of these ids, and its multipliers derive from their
// count, so the count must equal the config's engram_compressed_vocab_size.
// The spec is vLLM's build_compressed_token_map (vllm/models/deepseek_v4_1/
// common/engram.py); transformers' copy is the same:
//   text = the id decoded alone (skip_special_tokens=False, no cleanup);
//   key  = id_to_token(id) if text holds U+FFFD (a partial UTF-8 byte token),
//          else NormalizeEngramText(text), or text itself if that is empty;
//   ids  = keys numbered in first-seen order.
//
// This file owns the normalizer and the numbering, not the decoding
// (computed/text). Thread-safe: free functions over their arguments.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::text {
class Tokenizer;
}  // namespace warp::text

namespace warp::computed {

struct CompressedTokenMap {
  std::vector<int32_t> lookup;        // token id -> compressed id
  int32_t compressed_vocab_size = 0;  // distinct compressed ids
};

// vLLM's key normalizer, a tokenizers Sequence: NFKC, NFD, StripAccents (drop
// General_Category M*), Lowercase (each code point alone, Rust's
// char::to_lowercase), Replace [ \t\r\n]+ with one space, keep a text that is
// exactly one space (vLLM swaps it for U+E000 around Strip), Strip (Unicode
// White_Space), then every U+E000 becomes a space. REQUIRES: valid UTF-8.
std::string NormalizeEngramText(std::string_view text);

// decoded[id] is token id decoded alone; raw_tokens[id] its id_to_token
// string (read only where decoded[id] holds U+FFFD). Fails with
// FailedPrecondition naming engram_compressed_vocab_size and both counts when
// the keys number other than `expected_compressed_vocab_size`, and with
// InvalidArgument on a decoded text that is not UTF-8 or lists of unequal size.
absl::StatusOr<CompressedTokenMap> BuildCompressedTokenMap(std::span<const std::string> decoded,
                                                           std::span<const std::string> raw_tokens,
                                                           int32_t expected_compressed_vocab_size);

// The same over every id of `tokenizer` (vLLM iterates len(tokenizer): the
// ids of the vocab and the added tokens; here vocab_size(), largest id + 1).
absl::StatusOr<CompressedTokenMap> BuildCompressedTokenMap(const text::Tokenizer& tokenizer,
                                                           int32_t expected_compressed_vocab_size);

}  // namespace warp::computed
