#pragma once

// DeepSeek V4.1's engram addressing: which rows of each engram layer's table a
// token reads, from token ids alone (so the rows are known the moment a token
// is sampled). The spec is vLLM's vllm/models/deepseek_v4_1/common/engram.py
// (EngramLayout, compute_hash_multipliers, _hash_ids_kernel); transformers'
// DeepseekV41NgramHashState and ds4's ds4_engram_hash agree with it.
//
// Per engram layer L (in engram_layer_ids order):
//   multipliers m[0..N-1] = default_rng(10007 * L).integers(0, B, N, int64) * 2 + 1,
//     N = max_ngram_size, B = max(1, (INT64_MAX / compressed_vocab_size) / 2);
//   primes p[n][h] for n-gram sizes 2..N and heads 0..H-1: the next prime above
//     vocab_size - 1 that no earlier (layer, n, h) took (one set across layers);
//   offsets: the exclusive cumulative sum of the layer's (N-1)*H primes in
//     (n, h) order, so every column owns a disjoint range of the layer's table.
// The hash at position p over compressed ids t_k (k tokens back):
//   rolling = t_0 * m_0; for n = 2..N: rolling ^= t_{n-1} * m_{n-1};
//   row[(n-2)*H + h] = rolling % p[n][h] + offset[(n-2)*H + h].
// A look-back before the sequence start or at a dead (image) position, and
// every position further back, reads the pad id instead.
//
// This file owns the layout and the hash; not the compressed token map
// (compressed_token_map.h) nor the table rows themselves.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::computed {

// Marks a position whose token takes part in no n-gram (an image token): as
// vLLM's DEAD_ID.
inline constexpr int32_t kEngramDeadId = -1;

// The config fields the hash depends on (text_config of the release).
struct EngramHashOptions {
  std::vector<int32_t> layer_ids;     // engram_layer_ids, e.g. {1, 14}
  int64_t vocab_size = 0;             // engram_vocab_size: primes start above it - 1
  int32_t max_ngram_size = 0;         // engram_max_ngram_size: n-grams 2..max
  int32_t num_heads = 0;              // engram_n_heads
  int32_t compressed_vocab_size = 0;  // engram_compressed_vocab_size
  int32_t pad_id = 0;                 // compressed id of engram_pad_id (map[pad])
};

// The engram layout of a model and its n-gram hash.
// Thread-compatible; immutable after Create, so const calls may run concurrently.
class EngramHash {
 public:
  // Fails (InvalidArgument naming the field) on a field out of range.
  static absl::StatusOr<EngramHash> Create(const EngramHashOptions& options);

  size_t num_layers() const { return layer_ids_.size(); }
  // Rows per token per layer: (max_ngram_size - 1) * num_heads (24 on the release).
  size_t num_columns() const { return num_columns_; }
  // Rows per token, all layers: num_layers() * num_columns().
  size_t rows_per_token() const { return layer_ids_.size() * num_columns_; }

  // By position in engram_layer_ids (`layer_idx`), not by layer id.
  std::span<const int64_t> multipliers(size_t layer_idx) const;  // max_ngram_size of them
  std::span<const int64_t> primes(size_t layer_idx) const;       // num_columns(), (n, h) order
  std::span<const int64_t> offsets(size_t layer_idx) const;      // num_columns()
  // Rows of the layer's table: the sum of its primes (engram_num_embeddings[layer_idx]).
  int64_t num_rows(size_t layer_idx) const;

  // The rows of the token at `position` of `ids`, layer by layer, column by
  // column, into `rows` (rows_per_token() of them). Rows are per-layer table
  // indices in [0, num_rows(layer_idx)).
  // REQUIRES: position < ids.size(); each id in [0, compressed_vocab_size) or
  // kEngramDeadId; rows.size() == rows_per_token().
  void HashPosition(std::span<const int32_t> ids, size_t position, std::span<int64_t> rows) const;

  // HashPosition for every position: [position][layer][column].
  std::vector<int64_t> HashSequence(std::span<const int32_t> ids) const;

 private:
  EngramHash() = default;

  std::vector<int32_t> layer_ids_;
  size_t max_ngram_size_ = 0;
  size_t num_columns_ = 0;
  int32_t compressed_vocab_size_ = 0;
  int32_t pad_id_ = 0;
  std::vector<int64_t> multipliers_;  // [layer][max_ngram_size]
  std::vector<int64_t> primes_;       // [layer][column]
  std::vector<int64_t> offsets_;      // [layer][column]
};

}  // namespace warp::computed
