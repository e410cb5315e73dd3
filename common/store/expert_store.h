#pragma once

// ExpertStore: the expert records of one disk — its BankSet, an LfruCache of
// verified records inside a byte budget, and an IoEngine of reader threads.
// expertd serves from one; computed embeds one as its default ExpertSource.
//
// Concurrent requests for the same record share one read. A record handed
// out carries a lease that keeps it resident until dropped. A corrupt record
// is never admitted to the cache. Counters: VisitStats.
//
// Thread-safe. Lock order: mu_ only (never held across a read or a callback).
// REQUIRES: every ExpertRecord it handed out is dropped before it is destroyed.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/store/bank_set.h"
#include "common/store/expert_source.h"
#include "common/store/io_engine.h"
#include "common/store/lfru_cache.h"

namespace warp {

class ExpertStore : public ExpertSource {
 public:
  struct Options {
    uint64_t cache_bytes = 0;  // 0: no cache, every read goes to disk
    uint32_t io_threads = 4;
    BankSet::Options banks;
  };

  using Callback = std::function<void(absl::StatusOr<ExpertRecord>)>;

  static absl::StatusOr<std::unique_ptr<ExpertStore>> Open(
      std::shared_ptr<const Container> container, Options options);
  ~ExpertStore() override;

  // Fetches `key` and calls `done` exactly once: inline on a cache hit,
  // else on an I/O thread.
  void Fetch(const ExpertKey& key, Priority priority, Callback done);

  // ExpertSource.
  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override;
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override;

  // Drops queued, not yet started LOOKAHEAD reads (their layer has passed).
  size_t CancelLookahead();

  // Every counter as "expertd.store.NAME" -> value.
  std::map<std::string, uint64_t> Counters() const;

  const Container& container() const { return banks_->container(); }
  bool IsCached(const ExpertKey& key) const;

 private:
  struct InFlight {
    std::vector<Callback> waiters;
    Priority priority = Priority::kLookahead;
    bool started = false;
  };

  ExpertStore(std::unique_ptr<BankSet> banks, const Options& options);
  void RunRead(const ExpertKey& key);
  void DropRead(const ExpertKey& key);
  // A record of the cached buffer of `key`, pinned until its lease is dropped.
  ExpertRecord LeasedRecord(const ExpertKey& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Release(const ExpertKey& key);

  std::unique_ptr<BankSet> banks_;
  mutable absl::Mutex mu_;
  LfruCache cache_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ExpertKey, std::shared_ptr<const AlignedBuffer>> buffers_
      ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<ExpertKey, InFlight> in_flight_ ABSL_GUARDED_BY(mu_);
  struct Stats {
    uint64_t hits = 0, misses = 0, joined = 0, crc_errors = 0, read_errors = 0;
    uint64_t read_bytes[3] = {0, 0, 0};  // by Priority
    uint64_t lookahead_dropped = 0;
    uint64_t latency_us_buckets[8] = {};  // <0.1, <0.3, <1, <3, <10, <30, <100, >=100 ms
  } stats_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<IoEngine> io_;  // last: its threads use everything above
};

}  // namespace warp
