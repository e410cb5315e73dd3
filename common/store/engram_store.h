#pragma once

// EngramStore: the records of the engram tables of one model (DeepSeek V4.1,
// common/format/engram_table.h) in an LRU cache of whole 4 KiB records within
// a byte budget of its own (apart from the experts': a table's records are
// 4 KiB, an expert's slot megabytes), in front of wherever the records come
// from: the container's files (EngramFiles; computed's embedded tables and
// every expertd) or the expertds that serve them (computed --stores). Rows
// are asked for in batches: Fetch starts the reads of the records a batch
// needs as soon as its tokens are known (they are certain), Rows waits for
// them and copies the rows out. Read serves whole records, as an expertd
// hands them to its clients. A failed record (corrupt, I/O error, unknown)
// is never cached.
//
// Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/format/manifest.h"
#include "common/store/expert_source.h"

namespace warp {

// Row `row` of engram table `table` (an index into the model's tables).
struct EngramRow {
  uint32_t table = 0;
  uint64_t row = 0;
};

class EngramStore;

// The rows of one Fetch, their records held (read, or on their way) until it
// is dropped: a batch's later layers find theirs whatever the cache evicted.
class EngramFetch {
 public:
  EngramFetch() = default;
  size_t size() const { return rows_.size(); }

 private:
  friend class EngramStore;
  struct Held;
  std::vector<EngramRow> rows_;
  std::vector<std::shared_ptr<Held>> records_;  // [row]
};

class EngramStore {
 public:
  struct Options {
    uint64_t cache_bytes = uint64_t{256} << 20;  // records kept between batches
    uint32_t io_threads = 4;                     // of the files' reader (Open)
    bool verify = true;                          // CRC32C of every record read (Open)
  };
  struct Counters {
    uint64_t rows = 0;       // asked for by Fetch
    uint64_t row_hits = 0;   // of them, in a record already cached or on its way
    uint64_t records_read = 0;  // from `records` (disk, or the daemons)
    uint64_t bytes_read = 0;
  };

  // Over the container's files. REQUIRES: it has engram tables.
  static absl::StatusOr<std::unique_ptr<EngramStore>> Open(
      std::shared_ptr<const Container> container, const Options& options);
  // Over `records`, which serves the records of `tables` under their keys
  // (EngramKeyLayer). REQUIRES: `records` outlives the store.
  EngramStore(std::vector<EngramTableEntry> tables, ExpertSource& records, const Options& options);
  ~EngramStore();  // waits for the reads it started

  // Starts reading the records of `rows` that are not cached or on their way.
  EngramFetch Fetch(std::span<const EngramRow> rows);
  // Rows `which` of `fetch` (all of them without), row_bytes(table) each,
  // one after the other into `out`, once their records have come.
  absl::Status Rows(const EngramFetch& fetch, std::span<const size_t> which,
                    std::span<std::byte> out);
  absl::Status Rows(const EngramFetch& fetch, std::span<std::byte> out);

  // Whole records by key ({EngramKeyLayer(layer), record}), from the cache or
  // read into it; a key of no table fails alone (NotFound).
  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys);
  // Starts reading the records of `keys` of a table; drops the others.
  void Prefetch(std::span<const ExpertKey> keys);
  // Starts reading the records of `rows` that are not cached or on their way,
  // for a later Fetch (which counts them); they stay as the cache decides.
  void Prefetch(std::span<const EngramRow> rows);

  const std::vector<EngramTableEntry>& tables() const { return tables_; }
  uint32_t row_bytes(uint32_t table) const { return tables_[table].row_bytes; }
  uint64_t cache_bytes() const;  // the budget, in whole records
  Counters counters() const;
  // counters() as "engram.NAME" -> value.
  std::map<std::string, uint64_t> CounterMap() const;

 private:
  using Record = EngramFetch::Held;

  // The key of the record of table `table`'s row `row`.
  ExpertKey KeyOf(const EngramRow& row) const;
  // The record of `key`, appended to `to_read` if new. REQUIRES: mu_ held.
  std::shared_ptr<Record> Request(const ExpertKey& key, std::vector<ExpertKey>& to_read,
                                  bool* cached);
  // Reads `keys` from records_ (outside mu_).
  void StartReads(std::vector<ExpertKey> keys);
  void Landed(const ExpertKey& key, absl::StatusOr<ExpertRecord> record);
  void EvictBeyondBudget();  // REQUIRES: mu_ held
  // Waits until every record of `records` has come. REQUIRES: mu_ held by `lock`.
  void WaitFor(std::unique_lock<std::mutex>& lock, std::span<const std::shared_ptr<Record>> records);

  std::vector<EngramTableEntry> tables_;
  std::unique_ptr<ExpertSource> owned_records_;  // Open's files
  ExpertSource& records_;
  uint64_t capacity_;  // records the cache keeps

  mutable std::mutex mu_;
  std::condition_variable changed_;
  absl::flat_hash_map<ExpertKey, std::shared_ptr<Record>> cache_;
  std::list<ExpertKey> lru_;  // done records, least recent first
  uint64_t reads_in_flight_ = 0;
  Counters counters_;
};

}  // namespace warp
