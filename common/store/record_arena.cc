#include "common/store/record_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/status.h"

namespace warp {

absl::StatusOr<std::unique_ptr<RecordArena>> RecordArena::Create(uint64_t slot_bytes,
                                                                 uint32_t num_slots,
                                                                 const std::string& name,
                                                                 bool shared) {
  WARP_CHECK(slot_bytes > 0 && slot_bytes % 4096 == 0 && num_slots > 0);
  const uint64_t bytes = slot_bytes * num_slots;
  if (!shared) {
    // Private: anonymous memory on 2 MiB boundaries, asking for transparent
    // huge pages (a memfd gets 4 KiB pages here). Resident decode ran
    // 1.6-1.75x faster on them (EFFICIENCY.md, "The embedded cache on huge
    // pages"), the likely cause TLB misses on records computed long after
    // they were read.
    constexpr uint64_t kHugePage = uint64_t{2} << 20;
    void* raw = ::mmap(nullptr, bytes + kHugePage, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) {
      return ErrnoToStatus(errno, absl::StrCat("mmap ", bytes, " bytes for ", name));
    }
    const auto begin = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (begin + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > begin) ::munmap(raw, aligned - begin);
    if (const uintptr_t tail = begin + bytes + kHugePage - (aligned + bytes); tail > 0) {
      ::munmap(reinterpret_cast<void*>(aligned + bytes), tail);
    }
    auto* base = reinterpret_cast<std::byte*>(aligned);
    ::madvise(base, bytes, MADV_HUGEPAGE);  // a hint: without THP, 4 KiB pages
    return std::unique_ptr<RecordArena>(
        new RecordArena(ScopedFd(), base, slot_bytes, num_slots, /*shared=*/false));
  }
  ScopedFd fd(::memfd_create(name.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd.valid()) return ErrnoToStatus(errno, absl::StrCat("memfd_create ", name));
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("ftruncate memfd ", name, " to ", bytes, " bytes"));
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    return ErrnoToStatus(errno, absl::StrCat("mmap memfd ", name, " of ", bytes, " bytes"));
  }
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) {
    const int err = errno;
    ::munmap(base, bytes);
    return ErrnoToStatus(err, absl::StrCat("sealing memfd ", name));
  }
  // Linux >= 5.1: no new writable mappings (ours stays writable, O_DIRECT reads
  // into it included). Older kernels refuse the seal; clients map read-only anyway.
#ifdef F_SEAL_FUTURE_WRITE
  if (shared) ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_FUTURE_WRITE);
#endif
  ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SEAL);
  return std::unique_ptr<RecordArena>(
      new RecordArena(std::move(fd), static_cast<std::byte*>(base), slot_bytes, num_slots, shared));
}

RecordArena::RecordArena(ScopedFd fd, std::byte* base, uint64_t slot_bytes, uint32_t num_slots,
                         bool shared)
    : shared_(shared),
      fd_(std::move(fd)),
      base_(base),
      slot_bytes_(slot_bytes),
      num_slots_(num_slots),
      allocated_(num_slots, false),
      released_(num_slots, true) {
  free_.reserve(num_slots);
  for (uint32_t slot = num_slots; slot > 0; --slot) free_.push_back(slot - 1);  // 0 first
}

RecordArena::~RecordArena() { ::munmap(base_, arena_bytes()); }

std::optional<uint32_t> RecordArena::Allocate() {
  if (free_.empty()) return std::nullopt;
  const uint32_t slot = free_.back();
  free_.pop_back();
  allocated_[slot] = true;
  released_[slot] = false;  // about to be written
  return slot;
}

void RecordArena::Free(uint32_t slot) {
  WARP_CHECK(slot < num_slots_ && allocated_[slot]);
  allocated_[slot] = false;
  free_.push_back(slot);
}

std::span<std::byte> RecordArena::Slot(uint32_t slot) const {
  WARP_DCHECK(slot < num_slots_);
  return {base_ + SlotOffset(slot), slot_bytes_};
}

std::optional<uint64_t> RecordArena::OffsetOf(std::span<const std::byte> data) const {
  const auto begin = reinterpret_cast<uintptr_t>(base_);
  const auto at = reinterpret_cast<uintptr_t>(data.data());
  if (at < begin || at - begin > arena_bytes() || data.size() > arena_bytes() - (at - begin)) {
    return std::nullopt;
  }
  return at - begin;
}

absl::Status RecordArena::Release(uint32_t slot) {
  WARP_CHECK(slot < num_slots_ && !allocated_[slot]);
  if (shared_) {
    return absl::FailedPreconditionError("a shared record arena cannot release slots");
  }
  if (released_[slot]) return absl::OkStatus();
  if (::madvise(base_ + SlotOffset(slot), slot_bytes_, MADV_DONTNEED) != 0) {
    return ErrnoToStatus(errno, absl::StrCat("releasing slot ", slot, " of the record arena"));
  }
  released_[slot] = true;
  return absl::OkStatus();
}

std::optional<uint32_t> RecordArena::ClaimUnbackedSlot() {
  for (auto it = free_.rbegin(); it != free_.rend(); ++it) {  // Allocate()'s order
    if (!released_[*it]) continue;
    released_[*it] = false;
    return *it;
  }
  return std::nullopt;
}

uint32_t RecordArena::backed_slots() const {
  return static_cast<uint32_t>(std::count(released_.begin(), released_.end(), false));
}

uint64_t RecordArena::ResidentBytes() const {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((arena_bytes() + page - 1) / page);
  if (::mincore(base_, arena_bytes(), resident.data()) != 0) return 0;
  uint64_t pages = 0;
  for (unsigned char r : resident) pages += r & 1;
  return pages * page;
}

}  // namespace warp
