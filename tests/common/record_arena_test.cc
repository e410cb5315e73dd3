#include "common/store/record_arena.h"

#include <set>

#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp {
namespace {

TEST(RecordArenaTest, SlotsAreDisjointAndAtMultiplesOfTheSlotSize) {
  auto arena = RecordArena::Create(8192, 4, "test-arena");
  WARP_ASSERT_OK(arena);
  EXPECT_EQ((*arena)->arena_bytes(), 4u * 8192);
  EXPECT_GE((*arena)->fd(), 0);
  std::set<uint32_t> slots;
  for (int i = 0; i < 4; ++i) {
    std::optional<uint32_t> slot = (*arena)->Allocate();
    ASSERT_TRUE(slot.has_value());
    EXPECT_TRUE(slots.insert(*slot).second);
    EXPECT_EQ((*arena)->Slot(*slot).size(), 8192u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*arena)->Slot(*slot).data()) % 4096, 0u);
    EXPECT_EQ((*arena)->OffsetOf((*arena)->Slot(*slot)), (*arena)->SlotOffset(*slot));
    EXPECT_EQ((*arena)->SlotOffset(*slot), uint64_t{*slot} * 8192);
  }
  EXPECT_FALSE((*arena)->Allocate().has_value()) << "only 4 slots";
  EXPECT_EQ((*arena)->free_slots(), 0u);
}

TEST(RecordArenaTest, AFreedSlotIsAllocatedAgain) {
  auto arena = RecordArena::Create(4096, 2, "test-arena");
  WARP_ASSERT_OK(arena);
  const uint32_t a = *(*arena)->Allocate();
  const uint32_t b = *(*arena)->Allocate();
  (*arena)->Free(a);
  EXPECT_EQ((*arena)->Allocate(), a);
  (*arena)->Free(b);
  (*arena)->Free(a);
  EXPECT_EQ((*arena)->free_slots(), 2u);
}

TEST(RecordArenaTest, MemoryOutsideTheArenaHasNoOffset) {
  auto arena = RecordArena::Create(4096, 2, "test-arena");
  WARP_ASSERT_OK(arena);
  std::byte local[16];
  EXPECT_FALSE((*arena)->OffsetOf(local).has_value());
  std::span<std::byte> last = (*arena)->Slot(1);
  EXPECT_FALSE((*arena)->OffsetOf({last.data(), last.size() + 1}).has_value()) << "runs past";
}

}  // namespace
}  // namespace warp
