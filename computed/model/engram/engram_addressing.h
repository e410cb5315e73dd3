#pragma once

// EngramAddressing: what a model with an engram memory (DeepSeek V4.1)
// needs to find a token's rows: the compressed token map, built from the
// release's own tokenizer (the map is defined on it), and the n-gram hash of
// its config. Loaded once per model, by the converter (to refuse a wrong
// tokenizer or table size before anything is written) and by the engine.
//
// Thread-compatible value; immutable once loaded.

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/model/engram/engram_hash.h"
#include "computed/model/model_config.h"

namespace warp::computed {

struct EngramAddressing {
  EngramHash hash;
  std::vector<int32_t> token_map;  // token id -> compressed id
};

// From `config`'s engram keys and the tokenizer at `tokenizer_path`
// (tokenizer.json or tiktoken.model). Refuses, naming the key: a compressed
// vocabulary of another size than engram_compressed_vocab_size, a table
// whose engram_num_embeddings is not the sum of its layer's primes.
absl::StatusOr<EngramAddressing> LoadEngramAddressing(const ModelConfig& config,
                                                      const std::filesystem::path& tokenizer_path);

}  // namespace warp::computed
