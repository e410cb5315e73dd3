#pragma once

// BufferPool: aligned buffers of record size, handed out and taken back for
// reuse. A fresh 24 MB buffer costs its page faults and a zero fill on every
// read: with a new buffer per record, reads without a cache slot ran at 0.47
// GB/s against 1.9-2.5 GB/s into cache slots (tests/bench/store_bench,
// docs/EFFICIENCY.md). A buffer that comes back is kept, up to `max_idle`.
//
// Thread-safe. A buffer handed out keeps its pool alive.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/io/aligned_buffer.h"

namespace warp {

class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  static std::shared_ptr<BufferPool> Create(size_t max_idle);

  // A buffer of `bytes` rounded up to 4096, its contents undefined (an idle
  // buffer of that size if there is one). It returns to the pool when the
  // last copy of the pointer goes.
  std::shared_ptr<AlignedBuffer> Get(size_t bytes);

  size_t idle() const;
  uint64_t allocated() const;  // buffers made, not reused, so far

 private:
  explicit BufferPool(size_t max_idle) : max_idle_(max_idle) {}
  void Put(AlignedBuffer buffer);

  const size_t max_idle_;
  mutable absl::Mutex mu_;
  std::vector<AlignedBuffer> idle_ ABSL_GUARDED_BY(mu_);
  uint64_t allocated_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace warp
