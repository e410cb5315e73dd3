#pragma once

// A heap buffer aligned for O_DIRECT. Move-only: copying record-sized buffers
// must be explicit.
//
// Thread-compatible.

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>

#include "common/check.h"

namespace warp {

class AlignedBuffer {
 public:
  static constexpr size_t kAlignment = 4096;

  AlignedBuffer() = default;
  // Zero-filled buffer of `bytes` rounded up to kAlignment.
  explicit AlignedBuffer(size_t bytes) : AlignedBuffer(Uninitialized(bytes)) {
    std::memset(data_.get(), 0, size_);
  }
  // The same without the fill, for a buffer a read overwrites whole: the
  // fill would touch every page before the read does.
  // `alignment` (a power of two, at least kAlignment) may be larger, e.g. 2 MiB
  // for a buffer meant to sit on huge pages; size() is still `bytes` rounded
  // up to kAlignment.
  static AlignedBuffer Uninitialized(size_t bytes, size_t alignment = kAlignment) {
    WARP_CHECK(alignment >= kAlignment && (alignment & (alignment - 1)) == 0);
    AlignedBuffer buffer;
    buffer.size_ = RoundUp(bytes);
    const size_t allocated =
        (std::max<size_t>(buffer.size_, 1) + alignment - 1) / alignment * alignment;
    buffer.data_.reset(static_cast<std::byte*>(std::aligned_alloc(alignment, allocated)));
    WARP_CHECK(buffer.data_ != nullptr);
    return buffer;
  }
  // Uninitialized, and on transparent huge pages where the kernel gives them
  // (MADV_HUGEPAGE; THP is often "madvise" only) when at least one huge page
  // long: for weights every token reads (TLB misses) and buffers O_DIRECT pins
  // page by page on each read (docs/LEARNED.md has both measurements).
  static constexpr size_t kHugePage = size_t{2} << 20;
  static AlignedBuffer OnHugePages(size_t bytes) {
    if (bytes < kHugePage) return Uninitialized(bytes);
    AlignedBuffer buffer = Uninitialized(bytes, kHugePage);
    ::madvise(buffer.data(), (buffer.size() + kHugePage - 1) / kHugePage * kHugePage,
              MADV_HUGEPAGE);  // a hint: without THP, 4 KiB pages
    return buffer;
  }
  static size_t RoundUp(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<std::byte> span() { return {data_.get(), size_}; }
  std::span<const std::byte> span() const { return {data_.get(), size_}; }

 private:
  struct Free {
    void operator()(std::byte* p) const { std::free(p); }
  };
  size_t size_ = 0;
  std::unique_ptr<std::byte, Free> data_;
};

}  // namespace warp
