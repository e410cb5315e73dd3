#pragma once

// EngramReader: the engram rows of the tokens of a forward pass (DeepSeek
// V4.1). Begin hashes every token from the token ids alone (each sequence
// keeps its compressed ids for the look-back of the tokens after them) and
// starts the reads of all their rows at once, before layer 0 runs: they are
// certain. A thread of its own then waits for all of the pass's rows and
// notes when the last arrived, so a pass can tell how long after its start
// they were there, against when its first engram layer wanted them (--stages).
// Rows gives an engram layer's rows for the pass, decoded
// (E4M3 x 2^(scale - 127) per 32).
//
// Thread-compatible: one pass at a time (its waiter thread is internal).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "common/store/engram_store.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/state_archive.h"
#include "computed/model/engram/engram_addressing.h"

namespace warp::computed {

class EngramReader {
 public:
  EngramReader(const ModelConfig& config, EngramAddressing addressing, EngramStore& store,
               uint32_t sequences, uint32_t max_positions);
  ~EngramReader();  // waits for the pass in flight, if any
  EngramReader(const EngramReader&) = delete;
  EngramReader& operator=(const EngramReader&) = delete;

  // The pass's tokens, each with its sequence and position.
  void Begin(std::span<const int32_t> ids, std::span<const uint32_t> positions,
             std::span<const uint32_t> sequences);
  // The tokens of a later pass of `sequence` from `first_position` on (a
  // prompt's next chunk, known before it runs): starts reading their rows,
  // so that the pass finds them cached or on their way. Tokens past the
  // context are left out.
  void Prefetch(std::span<const int32_t> ids, uint32_t first_position, uint32_t sequence);
  // Table `table`'s rows for the pass's tokens, [n][rows per token x head_dim].
  // The pass's first call adds its timing to `stats` (engram_passes,
  // seconds_engram_arrive, _need, _wait).
  absl::Status Rows(uint32_t table, std::vector<float>& out, ForwardStats& stats);

  const EngramStore& store() const { return store_; }

  // The compressed ids of `sequence` at positions [0, positions): what the
  // hash of a later token looks back at (state_archive.h).
  void ArchiveHistory(uint32_t sequence, uint32_t positions, StateArchive& archive);

 private:
  using Clock = std::chrono::steady_clock;
  void WaitLoop();  // the waiter thread: each pass's rows, as they arrive

  uint32_t head_dim_, row_bytes_;
  EngramAddressing addressing_;
  EngramStore& store_;
  std::vector<std::vector<int32_t>> history_;  // [sequence][position]: compressed ids
  std::vector<int64_t> rows_;                  // the pass's [token][table][column]
  uint32_t n_ = 0;
  bool timed_ = false;  // the pass's timing was added to the stats

  std::mutex mu_;
  std::condition_variable changed_;
  // A pass is posted by Begin and ready once the waiter has its rows; the
  // waiter alone touches wanted_, fetch_ and bytes_ in between.
  bool posted_ = false, ready_ = false, stopping_ = false;
  std::vector<EngramRow> wanted_;  // the pass's rows, [token][table][column]
  EngramFetch fetch_;              // their records, held until the next pass
  std::vector<std::byte> bytes_;   // their bytes, row_bytes_ each
  absl::Status status_;
  Clock::time_point begin_, arrived_;
  std::thread waiter_;  // last: started once the rest is built
};

}  // namespace warp::computed
