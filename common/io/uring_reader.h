#pragma once

// UringReader: full reads through one io_uring, each split into aligned
// pieces that are all in flight together. One 24 MB O_DIRECT pread keeps a
// single request in the kernel; its pieces in flight use the device's
// parallelism (fio on this machine: 1.7-2.6 GB/s for one 24 MB read at a
// time, 3-4 GB/s for 24-48 MB of 1 MiB reads in flight).
//
// Thread-compatible: one reader per thread. UringPreadFull keeps one per
// calling thread (the store's I/O threads).

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "common/io/piece_gate.h"

struct io_uring;

namespace warp {

// Memory registered with a ring (io_uring_register_buffers): a read into it
// skips pinning its pages at every read, which on 4 KiB pages (shared memory
// gets no huge pages here) costs more than the read: fio, 1 MiB pieces x 16
// x 4 threads into shared memory, 1.6 GB/s unregistered, 4.4 registered
// (docs/EFFICIENCY.md "Fast-path misses in shared memory"). Pinned for as
// long as a ring holds them.
struct FixedBuffers {
  std::vector<std::span<std::byte>> buffers;  // each at most 1 GiB
};

// Told, on the reading thread, how long the read's landed prefix is each time
// it grows (pieces land in any order): its bytes are final, so a caller can
// digest them while the rest is in flight.
using OnLanded = std::function<void(uint64_t landed_bytes)>;

class UringReader {
 public:
  struct Options {
    // Pieces in flight per read; with a gate, the ring's size (a read takes
    // at most this many of the gate's).
    uint32_t depth = 32;
    uint64_t piece_bytes = 1 << 20;  // a multiple of 4096
    // Registered with the ring at Create. A reader is tied to this object:
    // UringPreadFull makes a thread a new reader for another one. Where the
    // kernel refuses it (RLIMIT_MEMLOCK without CAP_IPC_LOCK), reads into
    // them go unregistered, said once.
    std::shared_ptr<const FixedBuffers> fixed;
    // Shared by every reader of one disk: pieces go out only as it grants
    // them. Null: each read sends up to `depth` pieces on its own.
    std::shared_ptr<PieceGate> gate;
  };

  // Unavailable (with the kernel's reason) where io_uring is missing or
  // refused (old kernels, seccomp in containers); InvalidArgument for a
  // piece size that is not a positive multiple of 4096 or a zero depth.
  static absl::StatusOr<std::unique_ptr<UringReader>> Create(Options options);
  ~UringReader();
  UringReader(const UringReader&) = delete;
  UringReader& operator=(const UringReader&) = delete;

  // Same contract as PreadFull (common/io/file.h): exactly out.size() bytes at
  // `offset`, DataLoss "PATH: short read at OFFSET: got N of M bytes" where
  // the file ends first, errno errors naming "PATH @OFFSET". Every piece has
  // landed or failed before it returns, so `out` is the caller's again.
  // `rank` orders the read at the gate (lower first, followed if raised while
  // the read is under way; null: 0; PieceGate). `on_landed`, if set, is told
  // each longer landed prefix, the last one out.size().
  absl::Status ReadFull(int fd, std::span<std::byte> out, uint64_t offset, std::string_view path,
                        const ReadRank* rank = nullptr, const OnLanded& on_landed = nullptr);

  const Options& options() const { return options_; }
  bool registered() const { return registered_; }  // options().fixed is registered

 private:
  UringReader(std::unique_ptr<io_uring> ring, Options options, bool registered);
  // The registered buffer `out` lies in, if any.
  std::optional<int> FixedIndex(std::span<const std::byte> out) const;
  // Bytes per piece of a read from `fd` into registered (4 KiB-page) memory.
  uint64_t FixedPieceBytes(int fd);

  std::unique_ptr<io_uring> ring_;
  Options options_;
  const bool registered_;  // options_.fixed is registered with ring_
  absl::flat_hash_map<dev_t, uint64_t> fixed_piece_bytes_;  // by the device of a file read
};

// The largest read the block device holding `fd`'s file serves in one
// request into 4 KiB pages: queue/max_segments pages (virtio-blk here: 254,
// so a 1 MiB piece on 4 KiB pages is split into a 1016 KiB and an 8 KiB
// request). 0 where sysfs does not say (a file on no block device).
uint64_t DeviceRequestBytesOn4KiBPages(int fd);

// PreadFull's contract through this thread's UringReader (created on the
// thread's first call with `options`; later calls on the thread reuse it).
// Where a thread cannot get a ring, it reads with PreadFull and says so once.
// Without a ring, `on_landed` hears of the whole read once it is in.
absl::Status UringPreadFull(const UringReader::Options& options, int fd, std::span<std::byte> out,
                            uint64_t offset, std::string_view path, const ReadRank* rank = nullptr,
                            const OnLanded& on_landed = nullptr);

// Creates this thread's UringReader for `options` now, as UringPreadFull's
// first call would: a ring that registers buffers pins (and first faults in)
// them, which its first read would otherwise wait for (expertd's staging
// slots: 189 MiB of 4 KiB pages, estimated at 0.6 s on a VM, EFFICIENCY.md).
void UringPrepareThread(const UringReader::Options& options);

}  // namespace warp
