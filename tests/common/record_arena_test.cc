// RecordArena on its own, and the ExpertStore's use of it: cached records
// live in arena slots, uncached ones (no budget, every slot leased) on the heap.

#include "common/store/record_arena.h"

#include <set>

#include "common/format/container.h"
#include "common/store/expert_store.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

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

// The pre-faulter claims the slots Allocate() will hand out next, each slot
// once, until every free slot holds pages; a released slot can be claimed again.
TEST(RecordArenaTest, ClaimsUnbackedSlotsInAllocationOrderOnce) {
  auto arena = RecordArena::Create(4096, 3, "test-arena", /*shared=*/false);
  WARP_ASSERT_OK(arena);
  RecordArena& a = **arena;
  EXPECT_EQ(a.backed_slots(), 0u);
  EXPECT_EQ(a.ClaimUnbackedSlot(), 0u);
  EXPECT_EQ(a.Allocate(), 0u);  // the claimed slot is still the next one handed out
  EXPECT_EQ(a.backed_slots(), 1u);
  EXPECT_EQ(a.ClaimUnbackedSlot(), 1u);
  EXPECT_EQ(a.ClaimUnbackedSlot(), 2u);
  EXPECT_EQ(a.ClaimUnbackedSlot(), std::nullopt);
  EXPECT_EQ(a.backed_slots(), 3u);
  a.Free(0);
  EXPECT_EQ(a.ClaimUnbackedSlot(), std::nullopt);  // freed, but it holds pages
  WARP_ASSERT_OK(a.Release(0));
  EXPECT_EQ(a.backed_slots(), 2u);
  EXPECT_EQ(a.ClaimUnbackedSlot(), 0u);
}

TEST(RecordArenaTest, MemoryOutsideTheArenaHasNoOffset) {
  auto arena = RecordArena::Create(4096, 2, "test-arena");
  WARP_ASSERT_OK(arena);
  std::byte local[16];
  EXPECT_FALSE((*arena)->OffsetOf(local).has_value());
  std::span<std::byte> last = (*arena)->Slot(1);
  EXPECT_FALSE((*arena)->OffsetOf({last.data(), last.size() + 1}).has_value()) << "runs past";
}

class StoreArenaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = warp::testing::WriteTinyContainer(dir_ / "m.warp");
    WARP_ASSERT_OK(manifest);
    record_bytes_ = manifest->banks[0].record_bytes;
  }

  std::unique_ptr<ExpertStore> Open(uint64_t cache_bytes) {
    auto container = Container::Open(dir_ / "m.warp");
    EXPECT_TRUE(container.ok()) << container.status();
    auto store = ExpertStore::Open(std::move(*container), {.cache_bytes = cache_bytes});
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::move(*store) : nullptr;
  }

  warp::testing::TempDir dir_;
  uint64_t record_bytes_ = 0;
};

TEST_F(StoreArenaTest, CachedRecordsAreReadIntoArenaSlots) {
  std::unique_ptr<ExpertStore> store = Open(3 * record_bytes_ + 100);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->slot_bytes(), record_bytes_);
  EXPECT_EQ(store->arena_bytes(), 3 * record_bytes_) << "whole slots, rounded down";
  EXPECT_GE(store->arena_fd(), 0);
  std::vector<absl::StatusOr<ExpertRecord>> records = store->ReadAll({{{1, 0}, {2, 3}, {1, 0}}});
  for (const auto& record : records) WARP_ASSERT_OK(record);
  std::optional<uint64_t> first = store->ArenaOffset(*records[0]);
  std::optional<uint64_t> second = store->ArenaOffset(*records[1]);
  ASSERT_TRUE(first.has_value() && second.has_value());
  EXPECT_EQ(*first % record_bytes_, 0u);
  EXPECT_NE(*first, *second);
  EXPECT_EQ(store->ArenaOffset(*records[2]), first) << "a hit is the same slot";
}

TEST_F(StoreArenaTest, WhenEverySlotIsLeasedRecordsComeFromTheHeapUncached) {
  std::unique_ptr<ExpertStore> store = Open(record_bytes_);
  ASSERT_NE(store, nullptr);
  absl::StatusOr<ExpertRecord> held = store->ReadAll({{{1, 1}}})[0];
  WARP_ASSERT_OK(held);
  ASSERT_TRUE(store->ArenaOffset(*held).has_value());
  absl::StatusOr<ExpertRecord> other = store->ReadAll({{{1, 2}}})[0];
  WARP_ASSERT_OK(other);
  EXPECT_FALSE(store->ArenaOffset(*other).has_value());
  EXPECT_FALSE(store->IsCached({1, 2}));
  EXPECT_TRUE(store->IsCached({1, 1}));
  EXPECT_EQ(store->Counters().at("expertd.store.cache_rejected_inserts"), 1u);
  held = absl::CancelledError("dropped");
  absl::StatusOr<ExpertRecord> now = store->ReadAll({{{1, 2}}})[0];  // the slot is evictable now
  WARP_ASSERT_OK(now);
  EXPECT_EQ(store->ArenaOffset(*now), 0u);
}

TEST_F(StoreArenaTest, BelowOneSlotThereIsNoArena) {
  std::unique_ptr<ExpertStore> store = Open(record_bytes_ - 1);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->arena_fd(), -1);
  EXPECT_EQ(store->arena_bytes(), 0u);
  absl::StatusOr<ExpertRecord> record = store->ReadAll({{{2, 2}}})[0];
  WARP_ASSERT_OK(record);
  EXPECT_FALSE(store->ArenaOffset(*record).has_value());
}

}  // namespace
}  // namespace warp
