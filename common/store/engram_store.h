#pragma once

// EngramStore: the engram tables of one container (DeepSeek V4.1,
// common/format/engram_table.h), read a 4 KiB record at a time with
// O_DIRECT, each checked (footer, and CRC32C unless told not to) before it
// is kept, in an LRU cache of whole records within a byte budget of its own
// (apart from the experts': a table's records are 4 KiB, an expert's slot
// megabytes). Rows are asked for in batches: Fetch starts the reads of the
// records a batch needs as soon as its tokens are known (they are certain),
// Rows waits for them and copies the rows out. A corrupt record is an error
// naming the file, offset, table and record, and is never cached.
//
// Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"

namespace warp {

// Row `row` of engram table `table` (an index into manifest().engram).
struct EngramRow {
  uint32_t table = 0;
  uint64_t row = 0;
};

class EngramStore {
 public:
  struct Options {
    uint64_t cache_bytes = uint64_t{256} << 20;  // records kept between batches
    uint32_t io_threads = 4;                     // reads in flight at once
    bool verify = true;                          // CRC32C of every record read
  };
  struct Counters {
    uint64_t rows = 0;       // asked for by Fetch
    uint64_t row_hits = 0;   // of them, in a record already cached or on its way
    uint64_t records_read = 0;
    uint64_t bytes_read = 0;
  };

  // Opens the files of the container's engram tables. REQUIRES: it has some.
  static absl::StatusOr<std::unique_ptr<EngramStore>> Open(
      std::shared_ptr<const Container> container, const Options& options);
  ~EngramStore();

  // Starts reading the records of `rows` that are not cached or on their way.
  void Fetch(std::span<const EngramRow> rows);
  // The rows' bytes, row_bytes(table) each, one after the other into `out`;
  // reads what Fetch did not start and waits for the rest.
  absl::Status Rows(std::span<const EngramRow> rows, std::span<std::byte> out);

  uint32_t row_bytes(uint32_t table) const;
  Counters counters() const;

 private:
  struct Record {
    AlignedBuffer data;  // kEngramRecordBytes, once read and checked
    absl::Status status;
    bool done = false;
    std::list<uint64_t>::iterator lru;  // in lru_ once done and ok
  };

  EngramStore(std::shared_ptr<const Container> container, const Options& options);
  static uint64_t Key(uint32_t table, uint64_t record) { return (uint64_t{table} << 40) | record; }
  // The record of `key`, started if new. REQUIRES: mu_ held.
  std::shared_ptr<Record> Request(uint64_t key, bool* cached);
  void ReadLoop();
  absl::Status ReadRecord(uint64_t key, Record& record) const;
  void EvictBeyondBudget();  // REQUIRES: mu_ held

  std::shared_ptr<const Container> container_;
  Options options_;
  std::vector<OpenedFile> files_;  // indexed like manifest().engram
  uint64_t capacity_;              // records the cache keeps

  mutable std::mutex mu_;
  std::condition_variable changed_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<Record>> records_;
  std::list<uint64_t> lru_;     // done records, least recent first
  std::deque<uint64_t> queue_;  // to read
  Counters counters_;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace warp
