#pragma once

// EngramFiles: the engram tables of one container (DeepSeek V4.1,
// common/format/engram_table.h) as an ExpertSource of their 4 KiB records,
// keyed {EngramKeyLayer(layer), record}: each read with O_DIRECT on one of a
// few reader threads and checked (footer, and CRC32C unless told not to)
// before it is handed out. It caches nothing: an EngramStore in front of it
// does (computed's embedded tables, an expertd's). A key that names no table
// or a record past its end, an I/O error or a corrupt record fails that key
// alone, naming the file, offset, table and record.
//
// Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "common/store/expert_source.h"

namespace warp {

class EngramFiles : public ExpertSource {
 public:
  struct Options {
    uint32_t io_threads = 4;  // reads in flight at once
    bool verify = true;       // CRC32C of every record read
  };

  // Opens the files of the container's engram tables. REQUIRES: it has some.
  static absl::StatusOr<std::unique_ptr<EngramFiles>> Open(
      std::shared_ptr<const Container> container, const Options& options);
  ~EngramFiles() override;

  // Every key is read; the priority is ignored (engram reads are all certain).
  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  // engram.records_read and engram.read_bytes.
  std::map<std::string, uint64_t> Counters() const override;

 private:
  struct Job {
    ExpertKey key;
    std::shared_ptr<ReadBatch> batch;
    size_t index = 0;
  };

  EngramFiles(std::shared_ptr<const Container> container, const Options& options)
      : container_(std::move(container)), options_(options) {}
  absl::StatusOr<ExpertRecord> ReadRecord(const ExpertKey& key) const;
  void ReadLoop();

  std::shared_ptr<const Container> container_;
  Options options_;
  std::vector<OpenedFile> files_;  // indexed like manifest().engram

  mutable std::mutex mu_;
  std::condition_variable queued_;
  std::deque<Job> queue_;
  uint64_t records_read_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace warp
