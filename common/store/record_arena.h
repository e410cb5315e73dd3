#pragma once

// RecordArena: the memory of the record cache, as one shared-memory file
// (memfd) cut into equal slots, so a client on the same machine can map it
// and read cached records in place (the Unix-socket fast path; expertd's
// staging slots are slots of the same arena that the cache never gets). Owns
// the memfd, its read-write mapping and the free list; never decides what is
// cached (RecordCache) nor which slot holds which key (ExpertStore).
//
//   memfd, arena_bytes = num_slots x slot_bytes
//   +------------------+ 0
//   | slot 0           |  slot_bytes: the largest record_bytes of the
//   +------------------+ slot_bytes           container (a multiple of 4096,
//   | slot 1           |                      so every slot is O_DIRECT-aligned)
//   +------------------+ 2 x slot_bytes
//   | ...              |
//   +------------------+ arena_bytes
//
// The file is sealed against shrinking and growing, so a client holding the
// fd cannot truncate it under the daemon (which would SIGBUS the daemon), and,
// where the kernel has F_SEAL_FUTURE_WRITE, against new writable mappings.
//
// Thread-compatible: the ExpertStore calls Allocate/Free under its mutex;
// Slot() spans may be used from any thread by whoever allocated the slot.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/file.h"

namespace warp {

class RecordArena {
 public:
  // Creates num_slots x slot_bytes of memory and frees every slot. `shared`:
  // a memfd whose fd goes to clients (the fast path), sealed against new
  // writable mappings, which also forbids Release(). Otherwise (the embedded
  // store's) private anonymous memory with transparent huge pages, no fd, and
  // Release() gives slots' pages back.
  // REQUIRES: slot_bytes is a positive multiple of 4096; num_slots > 0.
  static absl::StatusOr<std::unique_ptr<RecordArena>> Create(uint64_t slot_bytes,
                                                             uint32_t num_slots,
                                                             const std::string& name,
                                                             bool shared = true);
  ~RecordArena();
  RecordArena(const RecordArena&) = delete;
  RecordArena& operator=(const RecordArena&) = delete;

  // A free slot, or nullopt if every slot is allocated.
  std::optional<uint32_t> Allocate();
  void Free(uint32_t slot);  // REQUIRES: `slot` is allocated.
  // Gives a free slot's pages back to the kernel (MADV_DONTNEED; the next
  // write into it faults fresh zero pages in). A shared arena cannot:
  // FailedPrecondition. REQUIRES: `slot` is free.
  absl::Status Release(uint32_t slot);
  // Bytes of the arena backed by memory now (mincore): what it is charged.
  uint64_t ResidentBytes() const;
  // For pre-faulting: of the free slots holding no pages, the one Allocate()
  // will hand out first; counted as backed from now on (the caller faults its
  // pages in). nullopt if every free slot holds pages.
  std::optional<uint32_t> ClaimUnbackedSlot();
  // Slots that hold pages, or are about to: allocated, written, or claimed.
  uint32_t backed_slots() const;

  std::span<std::byte> Slot(uint32_t slot) const;  // slot_bytes long
  bool IsAllocated(uint32_t slot) const { return allocated_[slot]; }
  uint64_t SlotOffset(uint32_t slot) const { return uint64_t{slot} * slot_bytes_; }

  // The byte offset of `data` in the arena, if it lies entirely inside it.
  std::optional<uint64_t> OffsetOf(std::span<const std::byte> data) const;

  int fd() const { return fd_.get(); }  // -1 for a private arena
  uint64_t slot_bytes() const { return slot_bytes_; }
  uint32_t num_slots() const { return num_slots_; }
  uint64_t arena_bytes() const { return uint64_t{num_slots_} * slot_bytes_; }
  size_t free_slots() const { return free_.size(); }

 private:
  RecordArena(ScopedFd fd, std::byte* base, uint64_t slot_bytes, uint32_t num_slots, bool shared);

  const bool shared_;
  ScopedFd fd_;
  std::byte* base_;  // MAP_SHARED, read-write, arena_bytes long
  const uint64_t slot_bytes_;
  const uint32_t num_slots_;
  std::vector<uint32_t> free_;   // LIFO: a recently freed slot is warm in the TLB
  std::vector<bool> allocated_;  // by slot, to catch double frees
  std::vector<bool> released_;   // by slot: holds no pages (never written, or Released since)
};

}  // namespace warp
