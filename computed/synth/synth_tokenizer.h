#pragma once

// A tokenizer.json for synthetic models whose token map matters (DeepSeek
// V4.1's engram: the engine builds its compressed token map from the
// container's tokenizer and refuses one whose compressed vocabulary is not the
// config's engram_compressed_vocab_size). A byte-level BPE in Hugging Face's
// format, as DeepSeek's: BOS and EOS (ids 0 and 1, special), the 256 byte
// tokens, a space before each letter and digit (" a": the key of "a"), then
// letter pairs ("ab") and quads ("abcd" = "ab" + "cd"), each a new compressed
// id, mixed with variants that normalize onto one already there ("Ab", "AB",
// " abcd"), until the vocabulary holds `vocab_size` tokens of
// which exactly `compressed_vocab_size` normalize apart
// (computed/model/engram/compressed_token_map.h counts them).
//
// Thread-safe: a pure function.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace warp::computed {

// The tokenizer.json text. Fails (InvalidArgument, naming both sizes) when the
// counts cannot be met: fewer tokens than the 258 fixed ones, a compressed
// vocabulary larger than the vocabulary or smaller than what the fixed tokens
// already normalize to.
absl::StatusOr<std::string> SynthTokenizerJson(uint32_t vocab_size, uint32_t compressed_vocab_size);

}  // namespace warp::computed
