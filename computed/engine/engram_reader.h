#pragma once

// EngramReader: the engram rows of the tokens of a forward pass (DeepSeek
// V4.1). Begin hashes every token from the token ids alone (each sequence
// keeps its compressed ids for the look-back of the tokens after them) and
// starts the reads of all their rows at once, before layer 0 runs: they are
// certain. Rows gives an engram layer's rows for the pass, decoded
// (E4M3 x 2^(scale - 127) per 32).
//
// Thread-compatible: one pass at a time.

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "common/store/engram_store.h"
#include "computed/model/engram/engram_addressing.h"

namespace warp::computed {

class EngramReader {
 public:
  EngramReader(const ModelConfig& config, EngramAddressing addressing, EngramStore& store,
               uint32_t sequences, uint32_t max_positions);

  // The pass's tokens, each with its sequence and position.
  void Begin(std::span<const int32_t> ids, std::span<const uint32_t> positions,
             std::span<const uint32_t> sequences);
  // Table `table`'s rows for the pass's tokens, [n][rows per token x head_dim].
  absl::Status Rows(uint32_t table, std::vector<float>& out);

  const EngramStore& store() const { return store_; }

 private:
  uint32_t head_dim_;
  EngramAddressing addressing_;
  EngramStore& store_;
  std::vector<std::vector<int32_t>> history_;  // [sequence][position]: compressed ids
  std::vector<int64_t> rows_;                  // the pass's [token][table][column]
  EngramFetch fetch_;                          // their records, in that order
  uint32_t n_ = 0;
};

}  // namespace warp::computed
