#include "common/io/buffer_pool.h"

#include <algorithm>

namespace warp {

std::shared_ptr<BufferPool> BufferPool::Create(size_t max_idle) {
  return std::shared_ptr<BufferPool>(new BufferPool(max_idle));
}

std::shared_ptr<AlignedBuffer> BufferPool::Get(size_t bytes) {
  const size_t size = AlignedBuffer::RoundUp(bytes);
  AlignedBuffer buffer;
  {
    absl::MutexLock lock(&mu_);
    auto it = std::find_if(idle_.begin(), idle_.end(),
                           [size](const AlignedBuffer& idle) { return idle.size() == size; });
    if (it != idle_.end()) {
      buffer = std::move(*it);
      idle_.erase(it);
    } else {
      ++allocated_;
    }
  }
  if (buffer.size() == 0) {
    // O_DIRECT pins every page of the buffer for each read, and 4 KiB pages
    // made that pinning the largest cost of a read without a cache slot
    // (perf: gup_fast_fallback).
    buffer = AlignedBuffer::OnHugePages(size);
  }
  return std::shared_ptr<AlignedBuffer>(new AlignedBuffer(std::move(buffer)),
                                        [pool = shared_from_this()](AlignedBuffer* returned) {
                                          pool->Put(std::move(*returned));
                                          delete returned;
                                        });
}

void BufferPool::Put(AlignedBuffer buffer) {
  absl::MutexLock lock(&mu_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(buffer));
}

size_t BufferPool::idle() const {
  absl::MutexLock lock(&mu_);
  return idle_.size();
}

uint64_t BufferPool::allocated() const {
  absl::MutexLock lock(&mu_);
  return allocated_;
}

}  // namespace warp
