#pragma once

// ExpertStore: the expert records of one disk — its BankSet, a RecordCache of
// verified records inside a byte budget (an EvictionOrder: duel by default,
// or lfru, lru or arc; eviction_order.h), and an IoEngine of reader threads.
// expertd serves from one; computed embeds one as its default ExpertSource.
//
// Concurrent requests for the same record share one read. The cache lives in
// a RecordArena (shared memory, so expertd's Unix-socket fast path can hand
// slots to clients): a record the RecordCache admits is read straight into a
// slot and verified there; one it refuses (no budget, every slot leased, a
// speculative read that may not evict) is read into a staging slot of the
// same shared arena if one is free (Options::staging_slots), else into a
// private heap buffer, and returned uncached. A cached record handed out carries a lease (its
// owner) that keeps its slot resident until dropped. A corrupt record is
// never admitted: its slot is freed at once. Counters: Counters(); each demand
// record says how it was served (ExpertRecord::served).
//
// Thread-safe. Lock order: mu_ only (never held across a read or a callback).
// REQUIRES: every ExpertRecord it handed out is dropped before it is destroyed.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/store/bank_set.h"
#include "common/store/client_set.h"
#include "common/store/expert_source.h"
#include "common/store/io_engine.h"
#include "common/store/record_arena.h"
#include "common/store/record_cache.h"

namespace warp {

class ExpertStore : public ExpertSource {
 public:
  // The fresh-memory rate below which computed paces its caches' growth: under
  // the disk's record reads here (1.4-4.4 GB/s), so a read into unbacked memory
  // would cost more than the miss an eviction may cause.
  static constexpr uint64_t kPaceGrowthBelowBytesPerSecond = 2'000'000'000;

  struct Options {
    // Budget of the shared-memory cache: it holds cache_bytes / slot_bytes()
    // records. Below one slot (0 included): no cache, every read goes to disk.
    uint64_t cache_bytes = 0;
    uint32_t io_threads = 4;  // IoEngine reader threads: records read at once
    // The order demand reads evict records in (ExpertdConfig.cache_policy).
    EvictionPolicy cache_policy = kDefaultEvictionPolicy;
    // The arena's fd goes to fast-path clients (expertd): sealed against new
    // writable mappings, so a shrink cannot give its memory back. An embedded
    // store's arena is private and can.
    bool shared_arena = true;
    // The arena's never-written cache slots get their pages faulted in ahead of
    // use, in the order they will be handed out, by a thread that runs only on
    // an otherwise idle core (SCHED_IDLE): the kernel zeroes fresh pages while
    // the engine waits for the disk, not inside the reads (EFFICIENCY.md "The
    // cache faulted in on an idle core"; a shared arena's 4 KiB pages of
    // shared memory the same, "A daemon's cache faulted in ahead"). Up to the
    // cache's capacity; ends when there is no such slot left.
    bool prefault_cache = false;
    // With prefault_cache: pause while this process's engine computes a
    // prefill pass and waits for no read (EngineActivity), checked every
    // 2 MiB. For an embedded store: on a VM, faulting fresh memory in beside a
    // prefill's compute slowed that compute 1.9-2.8x. Not for a daemon, whose
    // clients compute in other processes.
    bool prefault_yields_to_prefill = false;
    // Paced growth, with prefault_cache: while the prefault thread faults
    // fresh memory in slower than this (CPU time of its madvise; a VM that
    // hands free pages back to its host: 0.4-1.3 GB/s here, against 8-23 for
    // memory just freed), the cache grows only into slots it has backed and
    // evicts instead of reading into unbacked memory; a read the cache cannot
    // take then goes to a buffer. Assumed slow until its first slot is
    // measured. 0: never paced (EFFICIENCY.md "Fresh memory on a VM").
    uint64_t pace_growth_below_bytes_per_second = 0;
    // Slots of a shared arena, beyond the cache's, that records the cache does
    // not keep are read into: the fast path leases them like cached records
    // instead of copying them through its socket. A staged record holds its
    // slot until its last copy is dropped; with every staging slot taken, a
    // read goes to a heap buffer. Ignored for a private arena (the embedded
    // store's heap buffers are huge pages already).
    uint32_t staging_slots = 0;
    // Evictions spare the records the lookahead has predicted (RecordCache,
    // "Foresight"); false only for A/B.
    bool foresight = true;
    BankSet::Options banks;
  };

  // The knobs of a store embedded in a computing process (computed's
  // default source; --banks): a private arena that a governor's shrink can
  // give back, faulted in ahead on an idle core that pauses for a prefill,
  // with paced growth. A daemon's come from its ExpertdConfig (expertd/serve.h).
  static Options EmbeddedOptions() {
    return {.shared_arena = false,
            .prefault_cache = true,
            .prefault_yields_to_prefill = true,
            .pace_growth_below_bytes_per_second = kPaceGrowthBelowBytesPerSecond};
  }

  using Callback = std::function<void(absl::StatusOr<ExpertRecord>)>;

  static absl::StatusOr<std::unique_ptr<ExpertStore>> Open(
      std::shared_ptr<const Container> container, Options options);
  ~ExpertStore() override;

  // Fetches `key` and calls `done` exactly once: inline on a cache hit,
  // else on an I/O thread. `landing`, if set, is called (before `done`) with
  // the record as it lands when this request reads it, or joins its read,
  // into an arena slot through uring: on the I/O thread as the read starts,
  // or inline when the read was under way.
  using OnLanding = std::function<void(std::shared_ptr<const LandingRecord>)>;
  void Fetch(const ExpertKey& key, Priority priority, Callback done, OnLanding landing = nullptr);

  // ExpertSource.
  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override {
    PrefetchFor(keys, priority, kLocalClient);
  }
  // Prefetch on behalf of `client` (a daemon's client): its hints, which only
  // its own CancelLookahead withdraws.
  void PrefetchFor(std::span<const ExpertKey> keys, Priority priority, ClientId client);

  // `client` has passed the layers <= through_layer (all layers by default):
  // withdraws its LOOKAHEAD hints of them and its foresight. A queued, not
  // yet started read no other client still hints is dropped; returns how many
  // were (counted as lookahead_cancelled). Queue entries a demand took over
  // are not cancelled.
  size_t CancelLookahead(uint32_t through_layer = UINT32_MAX, ClientId client = kLocalClient);
  void CancelSpeculative(uint32_t through_layer) override { CancelLookahead(through_layer); }

  // Sets the record cache's capacity (whole slots, at most the arena): a memory
  // governor shrinking under pressure and growing back. Evicts what no longer
  // fits (leased records stay until dropped) and, for a private arena, gives
  // the free slots' memory back. Returns the capacity now in force.
  uint64_t SetCacheCapacity(uint64_t bytes);
  std::optional<uint64_t> ResizeCache(uint64_t bytes) override { return SetCacheCapacity(bytes); }

  // Every counter as "expertd.store.NAME" -> value.
  std::map<std::string, uint64_t> Counters() const override;

  const Container& container() const { return banks_->container(); }
  IoBackend io_backend() const { return banks_->io_backend(); }  // the one that runs
  // The settings in force, as the store and its banks hold them (not as asked
  // for): cache size and policy, foresight, I/O threads, backend, pieces and
  // their order, verification. Logged once by whoever opens a store.
  std::string Settings() const;
  // Every record handed out passed its CRC32C when it was read.
  bool verifies_records() const { return banks_->verifies(); }
  // RAM the record cache holds (whole slots), what a daemon reports in Describe.
  uint64_t cache_bytes() const { return max_cache_bytes_; }
  bool IsCached(const ExpertKey& key) const;

  // The shared-memory arena, for the fast path: its memfd (-1 and 0 bytes
  // when it holds no slot), its cache slots and staging slots, and their size.
  int arena_fd() const { return arena_ ? arena_->fd() : -1; }
  uint64_t arena_bytes() const { return arena_ ? arena_->arena_bytes() : 0; }
  uint64_t slot_bytes() const { return slot_bytes_; }
  // Bytes of the arena backed by memory now (what the cgroup is charged).
  uint64_t arena_resident_bytes() const { return arena_ ? arena_->ResidentBytes() : 0; }

  // Where `record` lies in the arena, if it is a cached or staged record this
  // store handed out; nullopt for a heap record. While the record (its lease) is
  // held, the bytes at that offset stay this record's.
  std::optional<uint64_t> ArenaOffset(const ExpertRecord& record) const;

 private:
  struct Waiter {
    Callback done;
    Served served;  // what this request is told (and counted as)
    OnLanding landing;
  };
  struct InFlight {
    std::vector<Waiter> waiters;
    Priority priority = Priority::kLookahead;
    bool started = false;
    // Once started: the priority it started at, whose bytes it counts. A
    // demand that uses it (joining or after) is that prediction's hit, even
    // where a certain prefetch raised it meanwhile (an early route naming a
    // guess the lookahead had on the disk).
    Priority started_as = Priority::kLookahead;
    // Once started into an arena slot through uring: the record as it lands,
    // for the waiters that want it, those who join later included.
    std::shared_ptr<LandingRecord> landing;
    // Once started: its rank at the disk's gate, raised when a more urgent
    // request joins it, so that its remaining pieces go out at that rank.
    std::shared_ptr<ReadRank> rank;
    // The clients whose hints (or speculative reads) asked for it: its
    // foresight's owners, and a LOOKAHEAD read stays queued while any is left.
    ClientSet predicted_by;
  };

  ExpertStore(std::unique_ptr<BankSet> banks, std::unique_ptr<RecordArena> arena,
              uint64_t slot_bytes, uint64_t cache_slots, std::vector<uint32_t> staging,
              const Options& options);
  // One started disk read: where it lands and who is handed the landing record.
  struct StartedRead {
    Priority priority = Priority::kLookahead;  // it started at
    std::optional<uint32_t> slot;              // a cache slot, admitted and pinned (Admit)
    std::optional<uint32_t> staged;            // else a staging slot, if one was free
    std::shared_ptr<LandingRecord> landing;    // with a slot, through uring
    std::shared_ptr<const ReadRank> rank;
    std::vector<OnLanding> told;  // waiters to hand `landing` before the read
  };
  // An I/O thread's job: reads `key`, unless it is a duplicate or a guess not kept.
  void RunRead(const ExpertKey& key);
  // Marks the queued read of `key` started and picks where it lands; nullopt
  // for a duplicate job or a guess the cache cannot keep (dropped).
  std::optional<StartedRead> StartRead(const ExpertKey& key);
  // Ends the read of `key` with `record`: keeps or frees its slot, counts it,
  // and calls each waiter back (without mu_).
  void FinishRead(const ExpertKey& key, const StartedRead& read, double ms,
                  absl::StatusOr<ExpertRecord> record);
  // The slot of a finished read kept or given back; a staged read's `record`
  // becomes its StagedRecord.
  void SettleSlot(const ExpertKey& key, const StartedRead& read,
                  absl::StatusOr<ExpertRecord>& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Latency, busy time, bytes and errors of a finished disk read.
  void CountDiskRead(Priority priority, double ms, const absl::StatusOr<ExpertRecord>& record)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A request of `priority` joins the read of `key`: a more urgent one
  // raises it, queued or started.
  void Raise(const ExpertKey& key, InFlight& flight, Priority priority)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads `key` into arena slot `slot` (a cache slot admitted and pinned by
  // Admit, or a staging slot) or, without a slot, into a heap buffer; a slot
  // read returns no data (LeasedRecord, StagedRecord); `rank` orders its
  // pieces at the disk's gate. Called without mu_.
  absl::StatusOr<ExpertRecord> ReadFromDisk(const ExpertKey& key, const ReadRank& rank,
                                            std::optional<uint32_t> slot, LandingRecord* landing);
  // Admits `key` to the cache and gives it a slot, pinned for the read; frees
  // the slots of the records evicted for it. nullopt: read it uncached.
  std::optional<uint32_t> Admit(const ExpertKey& key, Priority priority,
                                const ClientSet& predicted_by)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A free staging slot for a read the cache refused, or nullopt.
  std::optional<uint32_t> Stage(const ExpertKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The record read into staging slot `slot`; the slot is freed when its last
  // copy is dropped.
  ExpertRecord StagedRecord(const ExpertKey& key, uint32_t slot);
  void Unstage(uint32_t slot);
  void DropRead(const ExpertKey& key);
  void CountServed(Priority priority, Served served) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A record of the cached slot of `key`, pinned until its lease is dropped.
  ExpertRecord LeasedRecord(const ExpertKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(const ExpertKey& key);
  // The prefault thread (Options::prefault_cache).
  void PrefaultLoop(uint64_t pace_below, bool yield_to_prefill);
  // Faults `pages` in; with `yield_to_prefill`, step by step while
  // EngineActivity allows. Returns its CPU seconds, or nullopt if the store
  // shuts down or madvise fails.
  std::optional<double> FaultIn(std::span<std::byte> pages, bool yield_to_prefill);

  std::unique_ptr<BankSet> banks_;
  std::unique_ptr<RecordArena> arena_;  // null when the budget holds no slot
  const uint64_t slot_bytes_;           // the largest record_bytes; what a cached record costs
  const uint64_t max_cache_bytes_;      // the arena's cache slots; the rest are staging slots
  const uint32_t staging_slots_;
  const uint32_t io_threads_;
  mutable absl::Mutex mu_;
  RecordCache cache_ ABSL_GUARDED_BY(mu_);  // capacity: whole slots; charges slot_bytes_ each
  // The slot of every resident key (a key being read into its slot included).
  absl::flat_hash_map<ExpertKey, uint32_t> slots_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ExpertKey, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  // Staging slots held by no read or record (allocated from the arena for good).
  std::vector<uint32_t> staging_free_ ABSL_GUARDED_BY(mu_);
  struct Stats {
    // Requests of any priority: found resident / not (read or joined).
    uint64_t hits = 0, misses = 0, joined = 0, crc_errors = 0, read_errors = 0;
    uint64_t demand_served[kServedKinds] = {};  // demand requests by Served
    uint64_t read_bytes[3] = {0, 0, 0};         // by Priority
    uint64_t lookahead_cancelled = 0;
    uint64_t lookahead_unkept = 0;  // guesses not read: the cache had no slot to keep them
    uint64_t cache_shrinks = 0;           // SetCacheCapacity calls that lowered it
    uint64_t prefaulted_slots = 0;        // slots whose pages PrefaultLoop faulted in
    uint64_t prefault_bytes_per_second = 0;  // the last slot's fault rate (CPU time)
    uint64_t paced_inserts = 0;              // admissions capped by the backed slots
    uint64_t staged_reads = 0;            // reads into a staging slot
    uint64_t staging_full = 0;            // uncached reads that found every staging slot taken
    uint64_t latency_us_buckets[8] = {};  // <0.1, <0.3, <1, <3, <10, <30, <100, >=100 ms
    // Wall time with at least one disk read in flight: the I/O side of the
    // overlap efficiency max(I/O, compute) / token time.
    uint64_t disk_busy_us = 0;
    uint32_t disk_reads_running = 0;
    std::chrono::steady_clock::time_point busy_since;
  } stats_ ABSL_GUARDED_BY(mu_);
  // Paced growth is on: the cache may use only the arena's backed slots.
  bool paced_ ABSL_GUARDED_BY(mu_) = false;
  // The prefault thread is faulting a claimed slot in: counted as backed by
  // the arena, not yet by paced growth.
  bool faulting_slot_ ABSL_GUARDED_BY(mu_) = false;
  std::thread prefaulter_;        // joinable with Options::prefault_cache and an arena
  std::unique_ptr<IoEngine> io_;  // last: its threads use everything above
};

}  // namespace warp
