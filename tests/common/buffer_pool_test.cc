// BufferPool: buffers come back and are handed out again, at most max_idle
// are kept, and a buffer outlives the pool that made it.

#include "common/io/buffer_pool.h"

#include <cstdint>
#include <memory>

#include "gtest/gtest.h"

namespace warp {
namespace {

TEST(BufferPoolTest, AReturnedBufferIsHandedOutAgain) {
  std::shared_ptr<BufferPool> pool = BufferPool::Create(2);
  const std::byte* first = nullptr;
  {
    std::shared_ptr<AlignedBuffer> buffer = pool->Get(10000);
    EXPECT_EQ(buffer->size(), 12288u);  // rounded up to pages
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % 4096, 0u);
    first = buffer->data();
    EXPECT_EQ(pool->idle(), 0u);
  }
  EXPECT_EQ(pool->idle(), 1u);
  std::shared_ptr<AlignedBuffer> again = pool->Get(12288);
  EXPECT_EQ(again->data(), first);
  EXPECT_EQ(pool->allocated(), 1u);
}

TEST(BufferPoolTest, OnlyABufferOfTheSameSizeIsReused) {
  std::shared_ptr<BufferPool> pool = BufferPool::Create(2);
  pool->Get(4096).reset();
  std::shared_ptr<AlignedBuffer> larger = pool->Get(8192);
  EXPECT_EQ(larger->size(), 8192u);
  EXPECT_EQ(pool->allocated(), 2u);
  EXPECT_EQ(pool->idle(), 1u);  // the 4096 one waits for its size
}

TEST(BufferPoolTest, KeepsAtMostMaxIdle) {
  std::shared_ptr<BufferPool> pool = BufferPool::Create(2);
  {
    auto a = pool->Get(4096);
    auto b = pool->Get(4096);
    auto c = pool->Get(4096);
  }
  EXPECT_EQ(pool->idle(), 2u);
  EXPECT_EQ(pool->allocated(), 3u);
}

TEST(BufferPoolTest, ABufferOutlivesItsPool) {
  std::shared_ptr<AlignedBuffer> buffer;
  std::weak_ptr<BufferPool> weak;
  {
    std::shared_ptr<BufferPool> pool = BufferPool::Create(1);
    weak = pool;
    buffer = pool->Get(4096);
  }
  EXPECT_FALSE(weak.expired());  // the buffer keeps it alive to come back to
  buffer->span()[4095] = std::byte{1};
  buffer.reset();
  EXPECT_TRUE(weak.expired());
}

}  // namespace
}  // namespace warp
