#pragma once

// BankSet: the open bank files of one container directory, and verified
// reads of whole records from them: one aligned O_DIRECT pread per record, or
// (IoBackend::kUring) the record's pieces in flight together through the
// reading thread's io_uring; buffered where the filesystem refuses O_DIRECT,
// with one warning. The read can be swapped for a faulty one in tests (EIO,
// short reads, bit flips, delays).
//
// Thread-safe: immutable after Open; reads are preads.

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/io/buffer_pool.h"
#include "common/io/file.h"
#include "common/io/uring_reader.h"
#include "common/store/expert_source.h"

namespace warp {

// Same contract as PreadFull (common/io/file.h); `rank` orders the read among
// the disk's others (it may be raised while the read runs), and `on_landed`
// (may be null) hears of its landed prefix as it grows (UringReader::ReadFull).
// One that never calls it is correct, but its record's CRC is computed only
// once it is all in.
using PreadFn = std::function<absl::Status(int fd, std::span<std::byte> out, uint64_t offset,
                                           std::string_view path, const ReadRank& rank,
                                           const OnLanded& on_landed)>;

// How a record comes off the disk (`--io-engine`).
enum class IoBackend {
  kPread,  // one pread per record on the I/O thread
  kUring,  // the record in pieces, all in flight (UringReader)
};
// uring: as fast as pread with many records in flight, faster with one or two
// (a layer's few misses beyond RAM); tests/bench/io_engine.sh and
// lookahead_ab.sh, docs/LEARNED.md.
inline constexpr IoBackend kDefaultIoBackend = IoBackend::kUring;
absl::StatusOr<IoBackend> ParseIoBackend(std::string_view name);  // "pread", "uring", "": default
const char* IoBackendName(IoBackend backend);

class BankSet {
 public:
  struct Options {
    // CRC32C of records read (footers are always checked); false: --no-verify
    // (ExpertdConfig.no_verify), for measuring only.
    bool verify = true;
    // With verify: a record's CRC32C is checked at every read of it. false (the
    // default): until it first passes; later reads of it check the footer only.
    // The CRC is the largest CPU cost of a read (8% of decode at 4 GiB,
    // docs/LEARNED.md), and a record read again beyond RAM passed when it
    // first came in. --verify-every-read (ExpertdConfig.verify_every_read).
    bool verify_every_read = false;
    IoBackend io_backend = kDefaultIoBackend;
    UringReader::Options uring;  // pieces and depth of kUring
    // kUring: one PieceGate of uring.depth pieces for all the set's reads,
    // granted by priority, then start (unless uring.gate is given). false:
    // each read sends its own uring.depth pieces (--no-ordered-pieces).
    bool ordered_pieces = true;
    PreadFn pread;               // null: the backend's; set: replaces it (tests)
    // ReadRecord's buffers kept for reuse when they come back (ExpertStore:
    // one per I/O thread, the reserve the budget counts).
    size_t spare_buffers = 4;
  };

  // With kUring, probes io_uring once: where the kernel refuses it, logs why
  // and reads with pread (io_backend() says which one runs).
  static absl::StatusOr<std::unique_ptr<BankSet>> Open(std::shared_ptr<const Container> container,
                                                       Options options);

  // Reads and verifies the record of `key` into a buffer of its own (a spare
  // one when one has come back). NotFound if this
  // directory does not hold it; DataLoss "expert E of layer L: checksum
  // mismatch (FILE @ OFFSET)" for a corrupt record.
  // `rank` (a Priority's value, which may be raised while the read runs)
  // orders the read's pieces among the disk's others
  // (UringReader::Options::gate).
  absl::StatusOr<ExpertRecord> ReadRecord(const ExpertKey& key, const ReadRank& rank) const;

  // The same, into `out` (e.g. a cache slot): reads and verifies the first
  // RecordBytes(key) bytes of `out`, which must be 4096-aligned. `on_landed`
  // (may be null) hears of the landed prefix as it grows, unverified.
  // REQUIRES: out.size() >= RecordBytes(key).
  absl::Status ReadRecordInto(const ExpertKey& key, std::span<std::byte> out, const ReadRank& rank,
                              const OnLanded& on_landed = nullptr) const;

  // Readies the calling thread's reader (its io_uring and registered buffers),
  // which its first read would otherwise set up. For I/O threads at start.
  void PrepareReaderThread() const {
    if (prepare_reader_thread_) prepare_reader_thread_();
  }

  // record_bytes of the bank of `key`, or 0 if this directory does not hold `key`.
  uint64_t RecordBytes(const ExpertKey& key) const;

  IoBackend io_backend() const { return options_.io_backend; }
  const Options& options() const { return options_; }
  bool verifies() const { return options_.verify; }  // every record's CRC32C, at least once
  const Container& container() const { return *container_; }

 private:
  BankSet(std::shared_ptr<const Container> container, Options options)
      : container_(std::move(container)),
        options_(std::move(options)),
        buffers_(BufferPool::Create(options_.spare_buffers)) {}
  absl::Status NotHeld(const ExpertKey& key) const;  // NotFound naming the directory

  std::shared_ptr<const Container> container_;
  Options options_;
  std::shared_ptr<BufferPool> buffers_;
  std::function<void()> prepare_reader_thread_;  // set with kUring's own reads
  std::vector<OpenedFile> files_;                // indexed like manifest().banks
  // [bank][expert]: its CRC32C passed once (unless verify_every_read).
  std::vector<std::unique_ptr<std::atomic<bool>[]>> verified_;
};

}  // namespace warp
