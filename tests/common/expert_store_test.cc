// ExpertStore over a tiny container, with its pread swapped for a hook that
// records which records the disk is asked for, in order, and can block, fail,
// shorten, corrupt or delay a read (CacheLib's MockDevice, one level down).
// Records are looked at only through key, record_bytes and bytes(), so the
// tests hold whatever ExpertRecord owns its buffer with.

#include "common/store/expert_store.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/status.h"
#include "common/store/engine_activity.h"
#include "common/store/landing_record.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/tiny_container.h"

namespace warp {

// Lets gmock print keys in failure messages (found by ADL, so not in the unnamed namespace).
static void PrintTo(const ExpertKey& key, std::ostream* os) {
  *os << "{layer " << key.layer << ", expert " << key.expert << "}";
}

namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint32_t kLayers = 2;  // banks are layers 1 and 2
constexpr uint32_t kExperts = 8;

// What the hook does for one read instead of PreadFull (same contract).
using Fault = std::function<absl::Status(const ExpertKey& key, int fd, std::span<std::byte> out,
                                         uint64_t offset, std::string_view path)>;

std::string AsString(std::span<const std::byte> bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

std::vector<ExpertKey> AllKeys() {
  std::vector<ExpertKey> keys;
  for (uint32_t layer = 1; layer <= kLayers; ++layer) {
    for (uint32_t expert = 0; expert < kExperts; ++expert) keys.push_back({layer, expert});
  }
  return keys;
}

// Makes this process's madvise(..., advice) fail with `error` from now on, as a
// kernel without that advice does (a seccomp filter; for death-test children).
void RefuseMadvise(int advice, int error) {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[2])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(advice), 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | static_cast<uint32_t>(error)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{.len = static_cast<unsigned short>(std::size(filter)), .filter = filter};
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
    std::fprintf(stderr, "seccomp: %s\n", std::strerror(errno));
    std::exit(2);
  }
}

// In a death-test child: exits 1 saying `problem` unless it is empty.
void ExitWith(const std::string& problem) {
  if (problem.empty()) return;
  std::fprintf(stderr, "%s\n", problem.c_str());
  std::exit(1);
}

class ExpertStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest =
        warp::testing::WriteTinyContainer(model_, {.num_layers = kLayers, .num_experts = kExperts});
    WARP_ASSERT_OK(manifest);
    record_bytes_ = manifest->banks[0].record_bytes;
    for (const ExpertKey& key : AllKeys()) {
      auto bank = ReadFileToString(model_ / BankFileName(key.layer));
      WARP_ASSERT_OK(bank);
      bank_bytes_[{key.layer, key.expert}] =
          bank->substr(key.expert * record_bytes_, record_bytes_);
    }
  }

  void TearDown() override {
    // Never leave a reader blocked: the store joins its threads when it goes.
    if (!release_read_.HasBeenNotified()) release_read_.Notify();
    store_.reset();
  }

  // REQUIRES: called once per test, through ASSERT_NO_FATAL_FAILURE.
  void OpenStore(uint64_t cache_bytes, uint32_t io_threads, bool verify = true,
                 bool shared_arena = true, bool verify_every_read = true, bool prefault = false) {
    auto container = Container::Open(model_);
    WARP_ASSERT_OK(container);
    ExpertStore::Options options{.cache_bytes = cache_bytes,
                                 .io_threads = io_threads,
                                 .shared_arena = shared_arena,
                                 .prefault_cache = prefault,
                                 .prefault_yields_to_prefill = yield_to_prefill_,
                                 .pace_growth_below_bytes_per_second = pace_below_,
                                 .staging_slots = staging_slots_};
    options.banks.verify = verify;
    options.banks.verify_every_read = verify_every_read;
    options.banks.pread = [this](int fd, std::span<std::byte> out, uint64_t offset,
                                 std::string_view path, const ReadRank& rank,
                                 const OnLanded& /*on_landed*/) {
      return Pread(fd, out, offset, path, rank);
    };
    auto store = ExpertStore::Open(std::move(*container), std::move(options));
    WARP_ASSERT_OK(store);
    store_ = std::move(*store);
  }

  // The next read to reach the disk signals read_blocked_ and waits for release_read_.
  void BlockNextRead() {
    absl::MutexLock lock(&mu_);
    block_next_read_ = true;
  }

  void SetFault(Fault fault) {
    absl::MutexLock lock(&mu_);
    fault_ = std::move(fault);
  }

  // Keys the disk was asked for, in the order the reads started.
  std::vector<ExpertKey> reads() {
    absl::MutexLock lock(&mu_);
    return reads_;
  }

  int64_t ReadsOf(const ExpertKey& key) {
    absl::MutexLock lock(&mu_);
    return std::count(reads_.begin(), reads_.end(), key);
  }

  absl::StatusOr<ExpertRecord> ReadOne(const ExpertKey& key,
                                       Priority priority = Priority::kDemand) {
    return store_->ReadAll(std::span(&key, 1), priority).at(0);
  }

  std::shared_ptr<ReadBatch> Issue(const std::vector<ExpertKey>& keys, Priority priority) {
    return store_->Read(keys, priority);
  }

  uint64_t Counter(const std::string& name) const {
    return store_->Counters().at("expertd.store." + name);
  }

  const std::string& BankBytes(const ExpertKey& key) {
    return bank_bytes_.at({key.layer, key.expert});
  }

  // Every record of `batch` is OK and byte-identical to the bank.
  void ExpectBankBytes(const std::vector<ExpertKey>& keys, ReadBatch& batch) {
    std::vector<absl::StatusOr<ExpertRecord>> records = batch.WaitAll();
    ASSERT_EQ(records.size(), keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      WARP_ASSERT_OK(records[i]);
      EXPECT_EQ(records[i]->key, keys[i]);
      EXPECT_EQ(AsString(records[i]->bytes()), BankBytes(keys[i])) << i;
    }
  }

  warp::testing::TempDir dir_;
  fs::path model_ = dir_ / "m.warp";
  uint32_t staging_slots_ = 0;  // ExpertStore::Options::staging_slots of OpenStore
  uint64_t pace_below_ = 0;     // ExpertStore::Options::pace_growth_below_bytes_per_second
  bool yield_to_prefill_ = false;  // ExpertStore::Options::prefault_yields_to_prefill
  uint64_t record_bytes_ = 0;
  std::map<std::pair<uint32_t, uint32_t>, std::string> bank_bytes_;
  absl::Notification read_blocked_;
  absl::Notification release_read_;
  const ReadRank* blocked_rank_ = nullptr;  // the blocked read's, set before read_blocked_

 private:
  absl::Status Pread(int fd, std::span<std::byte> out, uint64_t offset, std::string_view path,
                     const ReadRank& rank) {
    // The tiny container is not sharded: expert e is the record at e * record_bytes.
    const size_t name_at = path.rfind("experts-L");
    const ExpertKey key{static_cast<uint32_t>(std::stoul(std::string(path.substr(name_at + 9)))),
                        static_cast<uint32_t>(offset / record_bytes_)};
    Fault fault;
    bool block = false;
    {
      absl::MutexLock lock(&mu_);
      reads_.push_back(key);
      fault = fault_;
      block = std::exchange(block_next_read_, false);
      if (block) blocked_rank_ = &rank;
    }
    if (block) {
      read_blocked_.Notify();
      release_read_.WaitForNotification();
    }
    return fault ? fault(key, fd, out, offset, path) : PreadFull(fd, out, offset, path);
  }

  absl::Mutex mu_;
  std::vector<ExpertKey> reads_ ABSL_GUARDED_BY(mu_);
  Fault fault_ ABSL_GUARDED_BY(mu_);
  bool block_next_read_ ABSL_GUARDED_BY(mu_) = false;

 protected:
  std::unique_ptr<ExpertStore> store_;  // last: destroyed first, its readers use the above
};

// --- Cache ------------------------------------------------------------------

TEST_F(ExpertStoreTest, SecondReadIsACacheHit) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4));
  const ExpertKey key{1, 3};
  for (int i = 0; i < 3; ++i) {
    absl::StatusOr<ExpertRecord> record = ReadOne(key);
    WARP_ASSERT_OK(record);
    EXPECT_EQ(record->key, key);
    EXPECT_EQ(record->record_bytes, record_bytes_);
    EXPECT_EQ(AsString(record->bytes()), BankBytes(key));
  }
  EXPECT_EQ(Counter("cache_misses"), 1u);
  EXPECT_EQ(Counter("cache_hits"), 2u);
  EXPECT_EQ(ReadsOf(key), 1);
  EXPECT_TRUE(store_->IsCached(key));
  EXPECT_EQ(Counter("cache_used_bytes"), record_bytes_);
}

TEST_F(ExpertStoreTest, BytesReadAreCountedPerPriority) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 4));
  WARP_ASSERT_OK(ReadOne({1, 0}, Priority::kDemand));
  WARP_ASSERT_OK(ReadOne({1, 1}, Priority::kCertain));
  WARP_ASSERT_OK(ReadOne({1, 2}, Priority::kLookahead));
  WARP_ASSERT_OK(ReadOne({1, 3}, Priority::kLookahead));
  WARP_ASSERT_OK(ReadOne({1, 0}, Priority::kDemand));  // a hit reads nothing
  EXPECT_EQ(Counter("read_bytes_demand"), record_bytes_);
  EXPECT_EQ(Counter("read_bytes_certain"), record_bytes_);
  EXPECT_EQ(Counter("read_bytes_lookahead"), 2 * record_bytes_);
  EXPECT_EQ(reads().size(), 4u);
}

// Each demand record says how it was served, and only a record some demand
// used before is a demand hit: the first use of a predicted record is that
// prediction's hit (lookahead or certain), counted apart.
TEST_F(ExpertStoreTest, DemandRecordsSayHowTheyWereServed) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 4));
  auto served = [&](const ExpertKey& key) {
    absl::StatusOr<ExpertRecord> record = ReadOne(key, Priority::kDemand);
    EXPECT_TRUE(record.ok()) << record.status();
    return record.ok() ? record->served : Served::kUnknown;
  };
  WARP_ASSERT_OK(ReadOne({1, 1}, Priority::kLookahead));
  WARP_ASSERT_OK(ReadOne({1, 2}, Priority::kCertain));
  WARP_ASSERT_OK(ReadOne({1, 3}, Priority::kLookahead));
  WARP_ASSERT_OK(ReadOne({1, 3}, Priority::kLookahead));  // hinted twice: still unused
  EXPECT_EQ(served({1, 0}), Served::kDisk);
  EXPECT_EQ(served({1, 0}), Served::kCache);
  EXPECT_EQ(served({1, 1}), Served::kLookahead);
  EXPECT_EQ(served({1, 1}), Served::kCache);  // used once: now the cache's
  EXPECT_EQ(served({1, 2}), Served::kCertain);
  EXPECT_EQ(served({1, 2}), Served::kCache);
  EXPECT_EQ(served({1, 3}), Served::kLookahead);
  EXPECT_EQ(Counter("demand_hits"), 3u);
  EXPECT_EQ(Counter("demand_lookahead_hits"), 2u);
  EXPECT_EQ(Counter("demand_certain_hits"), 1u);
  EXPECT_EQ(Counter("demand_misses"), 1u);
  // Speculative and certain requests are not demand figures.
  EXPECT_EQ(Counter("cache_hits") + Counter("cache_misses"), 11u);
}

// A demand that joins a lookahead read already on the disk is that
// prediction's hit; one that takes over a queued one is its own miss.
TEST_F(ExpertStoreTest, ADemandJoiningAStartedLookaheadReadIsALookaheadHit) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const ExpertKey started{1, 4}, queued{1, 5};
  store_->Prefetch(std::vector<ExpertKey>{started, queued}, Priority::kLookahead);
  read_blocked_.WaitForNotification();  // `started` is on the disk, `queued` waits
  std::shared_ptr<ReadBatch> batch =
      store_->Read(std::vector<ExpertKey>{started, queued}, Priority::kDemand);
  release_read_.Notify();
  std::vector<absl::StatusOr<ExpertRecord>> records = batch->WaitAll();
  WARP_ASSERT_OK(records[0]);
  WARP_ASSERT_OK(records[1]);
  EXPECT_EQ(records[0]->served, Served::kLookahead);
  EXPECT_EQ(records[1]->served, Served::kDisk);
  EXPECT_EQ(Counter("demand_lookahead_hits"), 1u);
  EXPECT_EQ(Counter("demand_misses"), 1u);
}

// A guess on the disk that a certain prefetch then names (an early route)
// stays that guess's: the demand joining its read counts a lookahead hit.
TEST_F(ExpertStoreTest, ADemandJoiningAGuessACertainReadRaisedIsALookaheadHit) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const ExpertKey guess{1, 4};
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kLookahead);
  read_blocked_.WaitForNotification();
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kCertain);
  std::shared_ptr<ReadBatch> batch = store_->Read(std::vector<ExpertKey>{guess}, Priority::kDemand);
  release_read_.Notify();
  std::vector<absl::StatusOr<ExpertRecord>> records = batch->WaitAll();
  WARP_ASSERT_OK(records[0]);
  EXPECT_EQ(records[0]->served, Served::kLookahead);
  EXPECT_EQ(Counter("demand_lookahead_hits"), 1u);
  EXPECT_EQ(Counter("demand_certain_hits"), 0u);
  EXPECT_EQ(Counter("read_bytes_lookahead"), record_bytes_);
}

// And once it has landed, the demand's first use is still the guess's hit,
// not a demand hit: the certain prefetch is a prediction, not a use.
TEST_F(ExpertStoreTest, AGuessACertainReadRaisedIsTheGuesssHitAfterItLands) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const ExpertKey guess{1, 4}, other{1, 5};
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kLookahead);
  read_blocked_.WaitForNotification();
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kCertain);
  release_read_.Notify();
  // The one reader runs this miss after the guess's read has completed.
  WARP_ASSERT_OK(ReadOne(other, Priority::kDemand));
  absl::StatusOr<ExpertRecord> record = ReadOne(guess, Priority::kDemand);
  WARP_ASSERT_OK(record);
  EXPECT_EQ(record->served, Served::kLookahead);
  EXPECT_EQ(Counter("demand_hits"), 0u);
  EXPECT_EQ(Counter("demand_lookahead_hits"), 1u);
  EXPECT_EQ(ReadsOf(guess), 1);
}

// A miss read into a cache slot is told to its batch as soon as it starts
// landing, before it completes, and the landing's bytes become the record's.
// A request that joins the read under way gets the same landing record; a
// hit gets only its completion.
TEST_F(ExpertStoreTest, AMissIsToldAsLandingBeforeItCompletes) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  const ExpertKey key{1, 3};
  BlockNextRead();
  std::shared_ptr<ReadBatch> batch = store_->Read(std::vector<ExpertKey>{key}, Priority::kDemand);
  read_blocked_.WaitForNotification();
  std::shared_ptr<ReadBatch> joined = store_->Read(std::vector<ExpertKey>{key}, Priority::kDemand);
  std::optional<ReadBatch::Arrival> first = batch->NextArrival();
  ASSERT_TRUE(first.has_value());
  ASSERT_NE(first->landing, nullptr);
  EXPECT_FALSE(first->done.has_value());
  std::optional<ReadBatch::Arrival> joined_first = joined->NextArrival();
  ASSERT_TRUE(joined_first.has_value());
  EXPECT_EQ(joined_first->landing, first->landing);  // told on joining, before the completion
  release_read_.Notify();
  EXPECT_EQ(first->landing->WaitFor(record_bytes_), record_bytes_);
  std::optional<ReadBatch::Arrival> second = batch->NextArrival();
  ASSERT_TRUE(second.has_value() && second->done.has_value());
  WARP_ASSERT_OK(*second->done);
  EXPECT_EQ(AsString(first->landing->data()), BankBytes(key));
  EXPECT_FALSE(batch->NextArrival().has_value());

  std::optional<ReadBatch::Arrival> joined_done = joined->NextArrival();
  ASSERT_TRUE(joined_done.has_value() && joined_done->done.has_value());
  WARP_ASSERT_OK(*joined_done->done);
  std::shared_ptr<ReadBatch> hit = store_->Read(std::vector<ExpertKey>{key}, Priority::kDemand);
  std::optional<ReadBatch::Arrival> cached = hit->NextArrival();
  ASSERT_TRUE(cached.has_value() && cached->done.has_value());
  WARP_ASSERT_OK(*cached->done);
  EXPECT_EQ((*cached->done)->served, Served::kCache);
}

// Next() knows nothing of landings; a landing told after its completion is
// dropped; NextArrival returns completions first.
TEST(ReadBatchTest, LandingsComeOnlyThroughNextArrivalAndOnlyBeforeTheirCompletion) {
  AlignedBuffer bytes(4096);
  auto landing = std::make_shared<LandingRecord>(bytes.span());
  ReadBatch plain(2);
  plain.Landing(0, landing);
  plain.Complete(1, ExpertRecord{.key = {1, 1}});
  plain.Complete(0, ExpertRecord{.key = {1, 0}});
  EXPECT_EQ(plain.Next()->first, 1u);
  EXPECT_EQ(plain.Next()->first, 0u);
  EXPECT_FALSE(plain.Next().has_value());

  ReadBatch batch(3);
  batch.Landing(0, landing);
  batch.Landing(1, landing);
  batch.Complete(2, ExpertRecord{.key = {1, 2}});
  batch.Complete(1, ExpertRecord{.key = {1, 1}});
  batch.Landing(2, landing);  // after its completion: dropped
  std::optional<ReadBatch::Arrival> a = batch.NextArrival();
  ASSERT_TRUE(a.has_value() && a->done.has_value());
  EXPECT_EQ(a->index, 2u);
  a = batch.NextArrival();
  ASSERT_TRUE(a.has_value() && a->done.has_value());
  EXPECT_EQ(a->index, 1u);
  a = batch.NextArrival();  // 1 has completed: only 0 is still landing
  ASSERT_TRUE(a.has_value() && a->landing != nullptr);
  EXPECT_EQ(a->index, 0u);
  batch.Complete(0, absl::DataLossError("expert 0 of layer 1: checksum mismatch"));
  a = batch.NextArrival();
  ASSERT_TRUE(a.has_value() && a->done.has_value());
  EXPECT_EQ(a->done->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(batch.NextArrival().has_value());
}

// A governor's shrink: what no longer fits is evicted (a leased record stays
// readable), a private arena gives the memory back, and the cache grows again.
TEST_F(ExpertStoreTest, ShrinkingTheCacheEvictsAndGivesMemoryBack) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/false));
  const uint64_t slot = store_->slot_bytes();
  for (uint32_t e = 0; e < kExperts; ++e) WARP_ASSERT_OK(ReadOne({1, e}));
  EXPECT_GE(store_->arena_resident_bytes(), kExperts * record_bytes_);
  absl::StatusOr<ExpertRecord> leased = ReadOne({1, 7});
  WARP_ASSERT_OK(leased);
  EXPECT_EQ(store_->SetCacheCapacity(2 * slot + slot / 2), 2 * slot);  // whole slots
  EXPECT_EQ(Counter("cache_capacity_bytes"), 2 * slot);
  EXPECT_EQ(Counter("cache_shrinks"), 1u);
  EXPECT_LE(Counter("cache_used_bytes"), 2 * slot);
  EXPECT_TRUE(store_->IsCached({1, 7}));  // leased: never evicted under its reader
  EXPECT_EQ(AsString(leased->bytes()), BankBytes({1, 7}));
  EXPECT_LE(store_->arena_resident_bytes(), 2 * slot);
  // Reads go on within the smaller cache, and the bytes are still right.
  for (uint32_t e = 0; e < kExperts; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne({2, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({2, e}));
  }
  EXPECT_LE(Counter("cache_used_bytes"), 2 * slot);
  // Grown back past the arena: it takes what the arena holds.
  EXPECT_EQ(store_->SetCacheCapacity(uint64_t{1} << 40), kExperts * slot);
  for (uint32_t e = 0; e < kExperts; ++e) WARP_ASSERT_OK(ReadOne({1, e}));
  EXPECT_EQ(Counter("cache_used_bytes"), kExperts * slot);
}

// Options::prefault_cache: every slot of a private arena is faulted in with
// no read asking, once each, and reads into those slots return their records.
TEST_F(ExpertStoreTest, APrivateArenaIsFaultedInBeforeAnyReadNeedsIt) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/false,
                                    /*verify_every_read=*/true, /*prefault=*/true));
  const uint64_t slots = Counter("cache_capacity_bytes") / store_->slot_bytes();
  ASSERT_GT(slots, 0u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Counter("cache_prefaulted_slots") < slots && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Counter("cache_prefaulted_slots"), slots);
  EXPECT_EQ(store_->arena_resident_bytes(), slots * store_->slot_bytes());
  EXPECT_EQ(Counter("read_bytes_demand"), 0u);
  for (uint32_t e = 0; e < kExperts; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne({1, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({1, e}));
  }
  EXPECT_EQ(Counter("cache_prefaulted_slots"), slots);
}

// Options::prefault_yields_to_prefill (an embedded store's): no page is faulted
// in while a prefill pass computes and no thread waits for reads; once the pass
// is over, every slot is.
TEST_F(ExpertStoreTest, ThePrefaultPausesWhileAPrefillComputes) {
  yield_to_prefill_ = true;
  std::optional<EngineActivity::Prefill> prefill(std::in_place);
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/false,
                                    /*verify_every_read=*/true, /*prefault=*/true));
  const uint64_t slots = Counter("cache_capacity_bytes") / store_->slot_bytes();
  ASSERT_GT(slots, 0u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(Counter("cache_prefaulted_slots"), 0u);
  EXPECT_EQ(store_->arena_resident_bytes(), 0u);
  prefill.reset();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Counter("cache_prefaulted_slots") < slots && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Counter("cache_prefaulted_slots"), slots);
  EXPECT_EQ(store_->arena_resident_bytes(), slots * store_->slot_bytes());
}

// A store destroyed while a prefill holds its prefault back ends at once: the
// prefault thread, waiting for the pass to end, sees the shutdown between waits.
TEST_F(ExpertStoreTest, AStoreWhosePrefaultIsPausedIsDestroyedPromptly) {
  yield_to_prefill_ = true;
  EngineActivity::Prefill prefill;
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/false,
                                    /*verify_every_read=*/true, /*prefault=*/true));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(Counter("cache_prefaulted_slots"), 0u);
  const auto start = std::chrono::steady_clock::now();
  store_.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

// Paced growth (a threshold no memory meets: paced until the prefault ends):
// reads racing the prefault thread return their records whether the cache
// could take them or not, the cache never outgrows its capacity, and once every
// slot is backed the pacing ends and every record is cached.
TEST_F(ExpertStoreTest, APacedCacheGrowsIntoBackedSlotsAndIsUnpacedOnceAllAre) {
  pace_below_ = UINT64_MAX;
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/false,
                                    /*verify_every_read=*/true, /*prefault=*/true));
  for (uint32_t e = 0; e < kExperts; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne({1, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({1, e}));
    EXPECT_LE(Counter("cache_used_bytes"), Counter("cache_capacity_bytes"));
  }
  const uint64_t slots = Counter("cache_capacity_bytes") / store_->slot_bytes();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Counter("cache_paced") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Counter("cache_paced"), 0u);
  EXPECT_GT(Counter("cache_prefault_bytes_per_second"), 0u);
  for (uint32_t e = 0; e < kExperts; ++e) WARP_ASSERT_OK(ReadOne({1, e}));
  EXPECT_EQ(Counter("cache_used_bytes"),
            std::min<uint64_t>(slots, kExperts) * store_->slot_bytes());
}

// A kernel that refuses MADV_POPULATE_WRITE (Linux before 5.14, or a sandbox):
// made real with a seccomp filter in a death-test child, so the refusal is the
// kernel's. The prefault stops at its first slot and ends the pacing; the store
// serves every record, and its cache grows by faults as records land.
TEST_F(ExpertStoreTest, AKernelRefusingThePrefaultLeavesTheStoreServingAndUnpaced) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  pace_below_ = UINT64_MAX;  // paced until the prefault ends
  EXPECT_EXIT(
      {
        RefuseMadvise(MADV_POPULATE_WRITE, EINVAL);
        OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/false,
                  /*verify_every_read=*/true, /*prefault=*/true);
        ExitWith(store_ == nullptr ? "the store did not open" : "");
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (Counter("cache_paced") != 0 && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        ExitWith(Counter("cache_paced") != 0 ? "still paced after 10 s" : "");
        ExitWith(Counter("cache_prefaulted_slots") != 0 ? "a slot was prefaulted" : "");
        for (uint32_t e = 0; e < kExperts; ++e) {
          absl::StatusOr<ExpertRecord> record = ReadOne({1, e});
          ExitWith(!record.ok() ? record.status().ToString() : "");
          ExitWith(AsString(record->bytes()) != BankBytes({1, e}) ? "a record's bytes differ" : "");
        }
        const uint64_t slots = Counter("cache_capacity_bytes") / store_->slot_bytes();
        ExitWith(Counter("cache_used_bytes") !=
                         std::min<uint64_t>(slots, kExperts) * store_->slot_bytes()
                     ? "the cache did not take every record it has room for"
                     : "");
        std::exit(0);
      },
      ::testing::ExitedWithCode(0), "");
}

// expertd's shared arena is faulted in ahead too (a fresh daemon's first
// misses ran at half the disk's speed zeroing shared memory): every cache slot,
// but not the staging slots, which each I/O thread's ring pins when it
// registers them.
TEST_F(ExpertStoreTest, ASharedArenaIsFaultedInAheadButNotItsStagingSlots) {
  staging_slots_ = 2;
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4, true, /*shared_arena=*/true,
                                    /*verify_every_read=*/true, /*prefault=*/true));
  const uint64_t slots = Counter("cache_capacity_bytes") / store_->slot_bytes();
  ASSERT_GT(slots, 0u);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Counter("cache_prefaulted_slots") < slots && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // nothing more comes
  EXPECT_EQ(Counter("cache_prefaulted_slots"), slots);
  EXPECT_EQ(store_->arena_resident_bytes(), slots * store_->slot_bytes());
  for (uint32_t e = 0; e < kExperts; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne({1, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({1, e}));
  }
}

// A shared arena (expertd's, mapped by clients) is sealed: a shrink evicts but
// cannot give pages back, and says nothing worse.
TEST_F(ExpertStoreTest, ASharedArenaShrinksWithoutReleasing) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4));
  EXPECT_GE(store_->arena_fd(), 0);
  for (uint32_t e = 0; e < kExperts; ++e) WARP_ASSERT_OK(ReadOne({1, e}));
  const uint64_t resident = store_->arena_resident_bytes();
  EXPECT_EQ(store_->SetCacheCapacity(store_->slot_bytes()), store_->slot_bytes());
  EXPECT_EQ(store_->arena_resident_bytes(), resident);
  EXPECT_LE(Counter("cache_used_bytes"), store_->slot_bytes());
  WARP_ASSERT_OK(ReadOne({1, 3}));
}

// --- Staging slots (the fast path's uncached records) --------------------------

TEST_F(ExpertStoreTest, UncachedRecordsAreReadIntoStagingSlotsOfTheSharedArena) {
  staging_slots_ = 2;
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/0, 2));
  EXPECT_EQ(store_->cache_bytes(), 0u) << "staging slots are not cache";
  EXPECT_EQ(store_->arena_bytes(), 2 * store_->slot_bytes());
  EXPECT_GE(store_->arena_fd(), 0);
  {
    absl::StatusOr<ExpertRecord> record = ReadOne({1, 3});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({1, 3}));
    EXPECT_TRUE(store_->ArenaOffset(*record).has_value()) << "in shared memory, leasable";
    EXPECT_FALSE(store_->IsCached({1, 3}));
    EXPECT_EQ(Counter("staged_reads"), 1u);
    EXPECT_EQ(Counter("staging_in_use"), 1u);
    EXPECT_EQ(Counter("cache_used_bytes"), 0u);
  }
  EXPECT_EQ(Counter("staging_in_use"), 0u) << "the slot goes back with the record";
  WARP_ASSERT_OK(ReadOne({1, 3}));
  EXPECT_EQ(ReadsOf({1, 3}), 2) << "a staged record is not a cached one";
}

TEST_F(ExpertStoreTest, WithEveryStagingSlotHeldAReadGoesToTheHeap) {
  staging_slots_ = 2;
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/0, 2));
  std::vector<ExpertRecord> held;
  for (uint32_t e = 0; e < 3; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne({2, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({2, e}));
    EXPECT_EQ(store_->ArenaOffset(*record).has_value(), e < 2) << e;
    held.push_back(*std::move(record));
  }
  EXPECT_EQ(Counter("staged_reads"), 2u);
  EXPECT_EQ(Counter("staging_full"), 1u);
  // Two staged records still hold their own bytes.
  for (const ExpertRecord& record : held)
    EXPECT_EQ(AsString(record.bytes()), BankBytes(record.key));
}

TEST_F(ExpertStoreTest, StagingSlotsNeverHoldCachedRecordsNorTheCacheTheirs) {
  staging_slots_ = 2;
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/record_bytes_, 2));
  EXPECT_EQ(store_->cache_bytes(), store_->slot_bytes());
  EXPECT_EQ(store_->arena_bytes(), 3 * store_->slot_bytes());
  EXPECT_EQ(Counter("cache_capacity_bytes"), store_->slot_bytes());
  // The first is cached and stays leased; the cache then refuses the next
  // two (its one slot is pinned): staged; the fourth finds no slot at all.
  std::vector<ExpertRecord> held;
  std::set<uint64_t> offsets;
  for (uint32_t e = 0; e < 4; ++e) {
    absl::StatusOr<ExpertRecord> record = ReadOne({1, e});
    WARP_ASSERT_OK(record);
    EXPECT_EQ(AsString(record->bytes()), BankBytes({1, e}));
    std::optional<uint64_t> offset = store_->ArenaOffset(*record);
    EXPECT_EQ(offset.has_value(), e < 3) << e;
    if (offset) offsets.insert(*offset);
    held.push_back(*std::move(record));
  }
  EXPECT_EQ(offsets.size(), 3u) << "three slots of their own";
  EXPECT_TRUE(store_->IsCached({1, 0}));
  EXPECT_EQ(Counter("cache_used_bytes"), store_->slot_bytes());
  EXPECT_EQ(Counter("staged_reads"), 2u);
  EXPECT_EQ(store_->SetCacheCapacity(10 * store_->slot_bytes()), store_->slot_bytes())
      << "a cache may not grow into the staging slots";
}

TEST_F(ExpertStoreTest, ACorruptRecordGivesItsStagingSlotBack) {
  staging_slots_ = 1;
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/0, 2));
  const ExpertKey bad{1, 2};
  SetFault([bad](const ExpertKey& key, int fd, std::span<std::byte> out, uint64_t offset,
                 std::string_view path) {
    WARP_RETURN_IF_ERROR(PreadFull(fd, out, offset, path));
    if (key == bad) out[100] ^= std::byte{0x01};
    return absl::OkStatus();
  });
  EXPECT_THAT(ReadOne(bad), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum mismatch")));
  EXPECT_EQ(Counter("staging_in_use"), 0u);
  absl::StatusOr<ExpertRecord> good = ReadOne({1, 3});
  WARP_ASSERT_OK(good);
  EXPECT_TRUE(store_->ArenaOffset(*good).has_value()) << "the one staging slot is free again";
  EXPECT_EQ(AsString(good->bytes()), BankBytes({1, 3}));
}

TEST_F(ExpertStoreTest, ConcurrentReadersOfOneStagedRecordShareItsSlot) {
  staging_slots_ = 1;
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/0, 2));
  BlockNextRead();
  std::shared_ptr<ReadBatch> first = Issue({{1, 5}}, Priority::kDemand);
  read_blocked_.WaitForNotification();
  std::shared_ptr<ReadBatch> second = Issue({{1, 5}}, Priority::kDemand);
  release_read_.Notify();
  std::vector<absl::StatusOr<ExpertRecord>> a = first->WaitAll();
  std::vector<absl::StatusOr<ExpertRecord>> b = second->WaitAll();
  WARP_ASSERT_OK(a[0]);
  WARP_ASSERT_OK(b[0]);
  EXPECT_EQ(a[0]->bytes().data(), b[0]->bytes().data());
  EXPECT_EQ(ReadsOf({1, 5}), 1);
  a.clear();
  EXPECT_EQ(Counter("staging_in_use"), 1u) << "held by the second reader";
  b.clear();
  // The reader thread drops its own copy just after it hands the record over.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Counter("staging_in_use") != 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(Counter("staging_in_use"), 0u);
}

TEST_F(ExpertStoreTest, APrivateArenaHasNoStagingSlots) {
  staging_slots_ = 2;
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/0, 2, true, /*shared_arena=*/false));
  EXPECT_EQ(store_->arena_bytes(), 0u);
  absl::StatusOr<ExpertRecord> record = ReadOne({1, 1});
  WARP_ASSERT_OK(record);
  EXPECT_FALSE(store_->ArenaOffset(*record).has_value());
  EXPECT_EQ(Counter("staging_slots"), 0u);
}

TEST_F(ExpertStoreTest, CacheNeverExceedsItsBudget) {
  // Not a whole number of records: the store may round down, never up.
  const uint64_t budget = 3 * record_bytes_ + record_bytes_ / 2;
  ASSERT_NO_FATAL_FAILURE(OpenStore(budget, 4));
  const uint64_t capacity = Counter("cache_capacity_bytes");
  ASSERT_GE(capacity, record_bytes_);
  ASSERT_LE(capacity, budget);
  std::mt19937 rng(20240611);
  std::deque<ExpertRecord> held;  // the last two records stay leased: pins are exercised too
  for (int i = 0; i < 300; ++i) {
    const ExpertKey key{1 + static_cast<uint32_t>(rng() % kLayers),
                        static_cast<uint32_t>(rng() % kExperts)};
    absl::StatusOr<ExpertRecord> record = ReadOne(key, static_cast<Priority>(rng() % 3));
    WARP_ASSERT_OK(record);
    ASSERT_EQ(AsString(record->bytes()), BankBytes(key)) << "read " << i;
    held.push_back(*std::move(record));
    if (held.size() > 2) held.pop_front();
    const std::map<std::string, uint64_t> counters = store_->Counters();
    ASSERT_LE(counters.at("expertd.store.cache_used_bytes"), capacity) << "after read " << i;
    ASSERT_LE(counters.at("expertd.store.cache_pinned_bytes"),
              counters.at("expertd.store.cache_used_bytes"))
        << "after read " << i;
  }
  // The leased records still hold their own bytes after all that churn.
  for (const ExpertRecord& record : held) {
    EXPECT_EQ(AsString(record.bytes()), BankBytes(record.key));
  }
  held.clear();
  EXPECT_EQ(Counter("cache_pinned_bytes"), 0u);
  EXPECT_GT(Counter("cache_evictions"), 0u);
}

TEST_F(ExpertStoreTest, LeasedRecordIsNeverEvicted) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(2 * record_bytes_, 1));
  const ExpertKey held_key{1, 0};
  absl::StatusOr<ExpertRecord> held = ReadOne(held_key);
  WARP_ASSERT_OK(held);
  const std::string before = AsString(held->bytes());
  int others = 0;
  for (const ExpertKey& key : AllKeys()) {
    if (key == held_key || others == 10) continue;
    WARP_ASSERT_OK(ReadOne(key));
    ++others;
  }
  ASSERT_EQ(others, 10);
  EXPECT_TRUE(store_->IsCached(held_key));
  EXPECT_EQ(AsString(held->bytes()), before);
  EXPECT_EQ(before, BankBytes(held_key));
  // The ten others took turns in the one unpinned slot.
  EXPECT_EQ(Counter("cache_evictions"), 9u);
  // Still served from memory.
  absl::StatusOr<ExpertRecord> again = ReadOne(held_key);
  WARP_ASSERT_OK(again);
  EXPECT_EQ(AsString(again->bytes()), before);
  EXPECT_EQ(ReadsOf(held_key), 1);
}

// A guess the cache has no free or cold slot for is not read at all (it would
// be read into a buffer and dropped, and its demand read again); a lookahead
// read someone waits for still gets its bytes, uncached.
TEST_F(ExpertStoreTest, LookaheadNeverEvictsAWarmDemandRecord) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(2 * record_bytes_, 1));
  const ExpertKey a{1, 0}, b{1, 1}, c{1, 2}, d{1, 3};
  WARP_ASSERT_OK(ReadOne(a));
  WARP_ASSERT_OK(ReadOne(b));
  store_->Prefetch(std::vector<ExpertKey>{c}, Priority::kLookahead);
  {
    // One I/O thread, FIFO within a priority: once d is back, c's turn has come too.
    absl::StatusOr<ExpertRecord> speculative = ReadOne(d, Priority::kLookahead);
    WARP_ASSERT_OK(speculative);  // the reader still gets its bytes, uncached
    EXPECT_EQ(AsString(speculative->bytes()), BankBytes(d));
  }
  EXPECT_EQ(ReadsOf(c), 0);
  EXPECT_EQ(ReadsOf(d), 1);
  EXPECT_EQ(Counter("lookahead_unkept"), 1u);
  EXPECT_EQ(Counter("read_bytes_lookahead"), record_bytes_);
  EXPECT_TRUE(store_->IsCached(a));
  EXPECT_TRUE(store_->IsCached(b));
  EXPECT_FALSE(store_->IsCached(c));
  EXPECT_FALSE(store_->IsCached(d));
  EXPECT_EQ(Counter("cache_rejected_inserts"), 2u);
  EXPECT_EQ(Counter("cache_evictions"), 0u);
}

TEST_F(ExpertStoreTest, DemandJoiningAStartedLookaheadReadMakesTheRecordWarm) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(2 * record_bytes_, 1));
  const ExpertKey a{1, 0}, b{1, 1}, c{1, 2};
  BlockNextRead();
  store_->Prefetch(std::vector<ExpertKey>{a}, Priority::kLookahead);
  read_blocked_.WaitForNotification();  // a's read has started
  const std::vector<ExpertKey> demand = {a};
  auto demand_batch = Issue(demand, Priority::kDemand);
  release_read_.Notify();
  ExpectBankBytes(demand, *demand_batch);
  WARP_ASSERT_OK(ReadOne(b));
  WARP_ASSERT_OK(ReadOne(c, Priority::kLookahead));
  EXPECT_TRUE(store_->IsCached(a)) << "a speculative read evicted a record a demand just used";
  EXPECT_TRUE(store_->IsCached(b));
  EXPECT_EQ(Counter("speculative_evicted_unused"), 0u);
}

// A demand that joins a guess already on the disk raises the rank the rest of
// its pieces go out at: they no longer wait behind other demand reads.
TEST_F(ExpertStoreTest, ADemandJoiningAStartedGuessRaisesItsRankAtTheGate) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(4 * record_bytes_, 1));
  const ExpertKey guess{1, 3};
  BlockNextRead();
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kLookahead);
  read_blocked_.WaitForNotification();
  EXPECT_EQ(blocked_rank_->get(), static_cast<uint32_t>(Priority::kLookahead));
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kCertain);
  EXPECT_EQ(blocked_rank_->get(), static_cast<uint32_t>(Priority::kCertain));
  auto batch = Issue({guess}, Priority::kDemand);
  EXPECT_EQ(blocked_rank_->get(), static_cast<uint32_t>(Priority::kDemand));
  store_->Prefetch(std::vector<ExpertKey>{guess}, Priority::kLookahead);
  EXPECT_EQ(blocked_rank_->get(), static_cast<uint32_t>(Priority::kDemand)) << "never lowered";
  release_read_.Notify();
  ExpectBankBytes({guess}, *batch);
  EXPECT_EQ(ReadsOf(guess), 1);
}

// A hint for a record already cached spares it from the next demand
// evictions (it would have been LFRU's first victim) until its layer passes.
TEST_F(ExpertStoreTest, AHintSparesACachedRecordUntilItsLayerPasses) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(2 * record_bytes_, 1));
  const ExpertKey a{2, 0}, b{2, 1}, c{1, 2}, d{1, 3};
  WARP_ASSERT_OK(ReadOne(a));
  WARP_ASSERT_OK(ReadOne(b));
  store_->Prefetch(std::vector<ExpertKey>{a}, Priority::kLookahead);  // a: predicted for layer 2
  WARP_ASSERT_OK(ReadOne(c));  // layer 1's demand: b goes, not the older a
  EXPECT_TRUE(store_->IsCached(a));
  EXPECT_FALSE(store_->IsCached(b));
  EXPECT_EQ(ReadsOf(a), 1) << "a hint for a cached record must not read it again";

  store_->CancelSpeculative(2);  // layer 2 has passed without using a
  WARP_ASSERT_OK(ReadOne(d));    // now a is the oldest once-used record again
  EXPECT_FALSE(store_->IsCached(a));
  EXPECT_TRUE(store_->IsCached(c));
  EXPECT_EQ(Counter("cache_foreseen_evicted"), 0u);
}

// --- Scheduling ---------------------------------------------------------------

TEST_F(ExpertStoreTest, DemandReadsRunBeforeQueuedLookaheadReads) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const std::vector<ExpertKey> first = {{1, 0}};
  auto first_batch = Issue(first, Priority::kDemand);
  read_blocked_.WaitForNotification();  // the only reader is busy; everything else queues

  store_->Prefetch(std::vector<ExpertKey>{{2, 1}, {2, 2}}, Priority::kLookahead);
  const std::vector<ExpertKey> last_lookahead = {{2, 3}};
  auto lookahead_batch = Issue(last_lookahead, Priority::kLookahead);
  const std::vector<ExpertKey> certain = {{2, 4}};
  auto certain_batch = Issue(certain, Priority::kCertain);
  const std::vector<ExpertKey> demand = {{1, 5}};
  auto demand_batch = Issue(demand, Priority::kDemand);
  EXPECT_EQ(Counter("queue_depth"), 5u);
  release_read_.Notify();

  ExpectBankBytes(first, *first_batch);
  ExpectBankBytes(demand, *demand_batch);
  ExpectBankBytes(certain, *certain_batch);
  ExpectBankBytes(last_lookahead, *lookahead_batch);  // queued last: all have run
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{1, 5}, ExpertKey{2, 4},
                                   ExpertKey{2, 1}, ExpertKey{2, 2}, ExpertKey{2, 3}));
}

TEST_F(ExpertStoreTest, CancelLookaheadDropsQueuedSpeculativeReads) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const std::vector<ExpertKey> first = {{1, 0}};
  auto first_batch = Issue(first, Priority::kDemand);
  read_blocked_.WaitForNotification();

  store_->Prefetch(std::vector<ExpertKey>{{2, 0}, {2, 1}}, Priority::kLookahead);
  auto speculative = Issue({{2, 2}}, Priority::kLookahead);
  const std::vector<ExpertKey> demand = {{1, 1}};
  auto demand_batch = Issue(demand, Priority::kDemand);
  EXPECT_EQ(store_->CancelLookahead(), 3u);
  EXPECT_EQ(Counter("lookahead_cancelled"), 3u);
  // A waiter on a cancelled read hears so at once, without any disk read.
  EXPECT_THAT(speculative->WaitAll().at(0),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("expert 2 of layer 2")));
  release_read_.Notify();

  ExpectBankBytes(first, *first_batch);
  ExpectBankBytes(demand, *demand_batch);  // demand reads are not touched
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{1, 1}));
  EXPECT_FALSE(store_->IsCached({2, 0}));
  EXPECT_EQ(Counter("queue_depth"), 0u);
  // A cancelled key is not stuck in flight: it can be read later.
  absl::StatusOr<ExpertRecord> later = ReadOne({2, 0});
  WARP_ASSERT_OK(later);
  EXPECT_EQ(AsString(later->bytes()), BankBytes({2, 0}));
}

TEST_F(ExpertStoreTest, CancelLookaheadCountsOnlyTheReadsItCancelled) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  auto first_batch = Issue({{1, 0}}, Priority::kDemand);
  read_blocked_.WaitForNotification();

  store_->Prefetch(std::vector<ExpertKey>{{2, 0}, {2, 1}}, Priority::kLookahead);
  const std::vector<ExpertKey> demand = {{2, 1}};  // joins, and so promotes, {2, 1}
  auto demand_batch = Issue(demand, Priority::kDemand);
  const size_t cancelled = store_->CancelLookahead();
  release_read_.Notify();
  ExpectBankBytes(demand, *demand_batch);

  EXPECT_EQ(Counter("lookahead_cancelled"), 1u);
  EXPECT_EQ(cancelled, 1u);
}

TEST_F(ExpertStoreTest, CancelSpeculativeDropsOnlyLookaheadReadsOfPassedLayers) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  auto first_batch = Issue({{1, 0}}, Priority::kDemand);
  read_blocked_.WaitForNotification();

  store_->Prefetch(std::vector<ExpertKey>{{1, 2}, {2, 4}, {1, 3}, {2, 5}}, Priority::kLookahead);
  auto passed = Issue({{1, 6}}, Priority::kLookahead);
  ExpertSource& source = *store_;  // through the interface the engine uses
  source.CancelSpeculative(1);
  EXPECT_THAT(passed->WaitAll().at(0),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("expert 6 of layer 1")));
  const std::vector<ExpertKey> sentinel = {{2, 6}};
  auto sentinel_batch = Issue(sentinel, Priority::kLookahead);  // queued last: runs last
  release_read_.Notify();
  ExpectBankBytes(sentinel, *sentinel_batch);

  // The cancelled reads never reached the disk; layer 2's kept their order.
  EXPECT_THAT(reads(),
              ElementsAre(ExpertKey{1, 0}, ExpertKey{2, 4}, ExpertKey{2, 5}, ExpertKey{2, 6}));
  EXPECT_EQ(Counter("lookahead_cancelled"), 3u);
  EXPECT_TRUE(store_->IsCached({2, 4}));
  EXPECT_FALSE(store_->IsCached({1, 2}));
}

// A daemon's clients hint for themselves: one's cancel withdraws its own hints,
// and a queued guess is dropped only when no client hints it any more.
TEST_F(ExpertStoreTest, AQueuedGuessStaysWhileAnyClientStillHintsIt) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const std::vector<ExpertKey> first = {{1, 0}};
  auto first_batch = Issue(first, Priority::kDemand);
  read_blocked_.WaitForNotification();

  store_->PrefetchFor(std::vector<ExpertKey>{{2, 0}, {2, 1}}, Priority::kLookahead, 7);
  store_->PrefetchFor(std::vector<ExpertKey>{{2, 1}}, Priority::kLookahead, 9);
  EXPECT_EQ(store_->CancelLookahead(2, 8), 0u);  // hinted nothing: drops nothing
  EXPECT_EQ(store_->CancelLookahead(2, 7), 1u);  // {2, 0}; {2, 1} is still 9's
  EXPECT_EQ(store_->CancelLookahead(), 0u);      // the local client hinted neither
  release_read_.Notify();
  ExpectBankBytes(first, *first_batch);
  const std::vector<ExpertKey> sentinel = {{2, 6}};
  auto sentinel_batch = Issue(sentinel, Priority::kLookahead);  // queued last: runs last
  ExpectBankBytes(sentinel, *sentinel_batch);
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{2, 1}, ExpertKey{2, 6}));
  EXPECT_EQ(Counter("lookahead_cancelled"), 1u);
}

TEST_F(ExpertStoreTest, CancelSpeculativeNeverCancelsDemandOrCertainReads) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const std::vector<ExpertKey> first = {{1, 0}};
  auto first_batch = Issue(first, Priority::kDemand);
  read_blocked_.WaitForNotification();

  const std::vector<ExpertKey> demand = {{1, 1}, {2, 1}};
  auto demand_batch = Issue(demand, Priority::kDemand);
  const std::vector<ExpertKey> certain = {{1, 2}};
  auto certain_batch = Issue(certain, Priority::kCertain);
  store_->Prefetch(std::vector<ExpertKey>{{1, 3}}, Priority::kLookahead);
  const std::vector<ExpertKey> promoted = {{1, 3}};  // a demand joins the queued lookahead read
  auto promoted_batch = Issue(promoted, Priority::kDemand);
  store_->CancelSpeculative(UINT32_MAX);
  release_read_.Notify();

  ExpectBankBytes(first, *first_batch);
  ExpectBankBytes(demand, *demand_batch);
  ExpectBankBytes(certain, *certain_batch);
  ExpectBankBytes(promoted, *promoted_batch);
  EXPECT_EQ(Counter("lookahead_cancelled"), 0u);
  EXPECT_EQ(ReadsOf({1, 3}), 1);
}

TEST_F(ExpertStoreTest, DemandJoiningAQueuedLookaheadReadIsServedAtDemandPriority) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 1));
  BlockNextRead();
  const std::vector<ExpertKey> first = {{1, 0}};
  auto first_batch = Issue(first, Priority::kDemand);
  read_blocked_.WaitForNotification();

  store_->Prefetch(std::vector<ExpertKey>{{2, 1}, {2, 2}, {2, 3}}, Priority::kLookahead);
  const std::vector<ExpertKey> joined = {{2, 3}};
  auto lookahead_waiter = Issue(joined, Priority::kLookahead);  // joins too, at its own priority
  auto demand_batch = Issue(joined, Priority::kDemand);
  const std::vector<ExpertKey> sentinel = {{2, 4}};
  auto sentinel_batch = Issue(sentinel, Priority::kLookahead);
  release_read_.Notify();

  ExpectBankBytes(first, *first_batch);
  ExpectBankBytes(joined, *demand_batch);
  ExpectBankBytes(joined, *lookahead_waiter);
  ExpectBankBytes(sentinel, *sentinel_batch);
  // {2, 3} ran right after the blocked read, ahead of the lookahead reads
  // queued before it, and only once.
  EXPECT_THAT(reads(), ElementsAre(ExpertKey{1, 0}, ExpertKey{2, 3}, ExpertKey{2, 1},
                                   ExpertKey{2, 2}, ExpertKey{2, 4}));
  EXPECT_EQ(Counter("reads_joined"), 2u);
  EXPECT_EQ(Counter("read_bytes_demand"), 2 * record_bytes_);
  EXPECT_EQ(Counter("read_bytes_lookahead"), 3 * record_bytes_);
}

TEST_F(ExpertStoreTest, ConcurrentReadsOfOneKeyShareOneDiskRead) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 4));
  BlockNextRead();  // holds the read until every thread has asked
  const ExpertKey key{2, 6};
  constexpr int kThreads = 8;
  absl::BlockingCounter issued(kThreads);
  std::vector<std::string> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::shared_ptr<ReadBatch> batch = store_->Read(std::span(&key, 1), Priority::kDemand);
      issued.DecrementCount();
      std::vector<absl::StatusOr<ExpertRecord>> records = batch->WaitAll();
      if (records.at(0).ok()) got[t] = AsString(records[0]->bytes());
    });
  }
  issued.Wait();
  release_read_.Notify();
  for (std::thread& thread : threads) thread.join();

  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], BankBytes(key)) << "thread " << t;
  EXPECT_EQ(ReadsOf(key), 1);
  EXPECT_EQ(Counter("cache_misses"), uint64_t{kThreads});
  EXPECT_EQ(Counter("reads_joined"), uint64_t{kThreads - 1});
  EXPECT_EQ(Counter("read_bytes_demand"), record_bytes_);
}

TEST_F(ExpertStoreTest, DestroyingTheStoreCompletesQueuedDemandReads) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 1));
  BlockNextRead();
  absl::Notification first_done, queued_done;
  store_->Fetch({1, 0}, Priority::kDemand,
                [&](absl::StatusOr<ExpertRecord>) { first_done.Notify(); });
  read_blocked_.WaitForNotification();
  store_->Fetch({1, 1}, Priority::kDemand, [&](absl::StatusOr<ExpertRecord>) {
    queued_done.Notify();  // the record (and its lease) goes with the argument
  });
  std::thread releaser([this] {
    absl::SleepFor(absl::Milliseconds(200));
    release_read_.Notify();
  });
  store_.reset();
  releaser.join();
  EXPECT_TRUE(first_done.HasBeenNotified());
  EXPECT_TRUE(queued_done.HasBeenNotified()) << "the queued demand read was never completed";
}

// --- Faults -------------------------------------------------------------------

TEST_F(ExpertStoreTest, EioFailsOnlyThatKeyNamingTheFileAndExpert) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, 4));
  const ExpertKey bad{2, 3};
  SetFault([bad](const ExpertKey& key, int fd, std::span<std::byte> out, uint64_t offset,
                 std::string_view path) {
    if (key == bad) return ErrnoToStatus(EIO, absl::StrCat(std::string(path), " @", offset));
    return PreadFull(fd, out, offset, path);
  });
  const std::vector<ExpertKey> keys = AllKeys();
  std::vector<absl::StatusOr<ExpertRecord>> records = store_->ReadAll(keys);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (keys[i] == bad) {
      EXPECT_FALSE(records[i].ok());
      EXPECT_THAT(std::string(records[i].status().message()),
                  AllOf(HasSubstr("expert 3 of layer 2"), HasSubstr("experts-L2.bin"),
                        HasSubstr("Input/output error")));
    } else {
      WARP_ASSERT_OK(records[i]);
      EXPECT_EQ(AsString(records[i]->bytes()), BankBytes(keys[i]));
    }
  }
  records.clear();
  EXPECT_FALSE(store_->IsCached(bad));
  EXPECT_EQ(Counter("cache_used_bytes"), (keys.size() - 1) * record_bytes_);
  // Nothing was cached for it: the next read goes to the disk, which works again.
  SetFault(nullptr);
  absl::StatusOr<ExpertRecord> again = ReadOne(bad);
  WARP_ASSERT_OK(again);
  EXPECT_EQ(AsString(again->bytes()), BankBytes(bad));
  EXPECT_EQ(ReadsOf(bad), 2);
}

TEST_F(ExpertStoreTest, EioIsCountedAsAReadErrorNotACrcError) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 1));
  SetFault([](const ExpertKey&, int, std::span<std::byte>, uint64_t offset, std::string_view path) {
    return ErrnoToStatus(EIO, absl::StrCat(std::string(path), " @", offset));
  });
  EXPECT_FALSE(ReadOne({1, 1}).ok());
  EXPECT_EQ(Counter("read_errors"), 1u);
  EXPECT_EQ(Counter("crc_errors"), 0u);
}

TEST_F(ExpertStoreTest, ShortReadIsDataLoss) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 2));
  const ExpertKey bad{1, 1};
  SetFault([bad](const ExpertKey& key, int fd, std::span<std::byte> out, uint64_t offset,
                 std::string_view path) {
    if (!(key == bad)) return PreadFull(fd, out, offset, path);
    // What PreadFull says when the file ends early.
    const size_t got = out.size() / 2;
    WARP_RETURN_IF_ERROR(PreadFull(fd, out.first(got), offset, path));
    return absl::DataLossError(absl::StrCat(std::string(path), ": short read at ", offset, ": got ",
                                            got, " of ", out.size(), " bytes"));
  });
  EXPECT_THAT(ReadOne(bad), StatusIs(absl::StatusCode::kDataLoss,
                                     AllOf(HasSubstr("expert 1 of layer 1"),
                                           HasSubstr("experts-L1.bin"), HasSubstr("short read"))));
  EXPECT_FALSE(store_->IsCached(bad));
  absl::StatusOr<ExpertRecord> other = ReadOne({1, 2});
  WARP_ASSERT_OK(other);
  EXPECT_EQ(AsString(other->bytes()), BankBytes({1, 2}));
}

TEST_F(ExpertStoreTest, BitFlipIsChecksumMismatchAndNeverCached) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 2));
  const ExpertKey bad{1, 2};
  SetFault([bad](const ExpertKey& key, int fd, std::span<std::byte> out, uint64_t offset,
                 std::string_view path) {
    WARP_RETURN_IF_ERROR(PreadFull(fd, out, offset, path));
    if (key == bad) out[100] ^= std::byte{0x01};  // inside the payload
    return absl::OkStatus();
  });
  for (int attempt = 1; attempt <= 2; ++attempt) {
    EXPECT_THAT(ReadOne(bad), StatusIs(absl::StatusCode::kDataLoss,
                                       AllOf(HasSubstr("expert 2 of layer 1: checksum mismatch"),
                                             HasSubstr("experts-L1.bin"))));
    EXPECT_FALSE(store_->IsCached(bad));
    EXPECT_EQ(Counter("crc_errors"), uint64_t(attempt));
    EXPECT_EQ(ReadsOf(bad), attempt);  // never served from memory
  }
  EXPECT_EQ(Counter("cache_used_bytes"), 0u);
  absl::StatusOr<ExpertRecord> other = ReadOne({1, 3});
  WARP_ASSERT_OK(other);
  EXPECT_EQ(AsString(other->bytes()), BankBytes({1, 3}));
}

TEST_F(ExpertStoreTest, WithoutVerifyAPayloadFlipPassesButAFooterFlipDoesNot) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * record_bytes_, 2, /*verify=*/false));
  const ExpertKey payload_flipped{1, 4}, footer_flipped{1, 5};
  const uint64_t footer_at = record_bytes_ - kRecordFooterBytes;  // the magic's first byte
  SetFault([=](const ExpertKey& key, int fd, std::span<std::byte> out, uint64_t offset,
               std::string_view path) {
    WARP_RETURN_IF_ERROR(PreadFull(fd, out, offset, path));
    if (key == payload_flipped) out[100] ^= std::byte{0x01};
    if (key == footer_flipped) out[footer_at] ^= std::byte{0x01};
    return absl::OkStatus();
  });
  absl::StatusOr<ExpertRecord> record = ReadOne(payload_flipped);
  WARP_ASSERT_OK(record);  // verify=false: the CRC is not computed
  std::string expected = BankBytes(payload_flipped);
  expected[100] ^= 0x01;
  EXPECT_EQ(AsString(record->bytes()), expected);

  EXPECT_THAT(ReadOne(footer_flipped),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("expert 5 of layer 1: bad footer magic"),
                             HasSubstr("experts-L1.bin"))));
  EXPECT_FALSE(store_->IsCached(footer_flipped));
}

// Without verify_every_read: a record's CRC is checked when it first comes off the disk;
// later reads of it check the footer only. A record that never passed is
// checked on every read.
TEST_F(ExpertStoreTest, VerifyOnceChecksTheCrcAtARecordsFirstReadOnly) {
  ASSERT_NO_FATAL_FAILURE(OpenStore(/*cache_bytes=*/0, 2, /*verify=*/true,
                                    /*shared_arena=*/true, /*verify_every_read=*/false));
  const ExpertKey checked{1, 2}, bad{1, 3};
  WARP_ASSERT_OK(ReadOne(checked));
  SetFault([=](const ExpertKey& key, int fd, std::span<std::byte> out, uint64_t offset,
               std::string_view path) {
    WARP_RETURN_IF_ERROR(PreadFull(fd, out, offset, path));
    if (key == checked || key == bad) out[100] ^= std::byte{0x01};  // inside the payload
    return absl::OkStatus();
  });
  // Passed once: read again (no cache), its CRC is not computed.
  absl::StatusOr<ExpertRecord> again = ReadOne(checked);
  WARP_ASSERT_OK(again);
  EXPECT_EQ(ReadsOf(checked), 2);
  // Never passed: checked at every read.
  for (int attempt = 1; attempt <= 2; ++attempt) {
    EXPECT_THAT(ReadOne(bad), StatusIs(absl::StatusCode::kDataLoss,
                                       HasSubstr("expert 3 of layer 1: checksum mismatch")));
  }
  EXPECT_EQ(Counter("crc_errors"), 2u);
}

TEST_F(ExpertStoreTest, SlowReadsStillReturnTheRightBytes) {
  constexpr uint32_t kIoThreads = 4;
  ASSERT_NO_FATAL_FAILURE(OpenStore(kExperts * kLayers * record_bytes_, kIoThreads));
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  SetFault([&](const ExpertKey&, int fd, std::span<std::byte> out, uint64_t offset,
               std::string_view path) {
    const int now = ++in_flight;
    int seen = max_in_flight.load();
    while (now > seen && !max_in_flight.compare_exchange_weak(seen, now)) {
    }
    absl::SleepFor(absl::Milliseconds(20));
    absl::Status status = PreadFull(fd, out, offset, path);
    --in_flight;
    return status;
  });
  const std::vector<ExpertKey> keys = AllKeys();
  ExpectBankBytes(keys, *store_->Read(keys, Priority::kDemand));
  EXPECT_LE(max_in_flight.load(), int{kIoThreads});
  EXPECT_GE(max_in_flight.load(), 2) << "16 slow reads never overlapped on 4 I/O threads";
}

}  // namespace
}  // namespace warp
