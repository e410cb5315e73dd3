#pragma once

// ExpertSource: where the engine gets routed-expert records from. One
// interface for the embedded store, the Unix-socket client and the gRPC
// client, so the forward pass never knows which it talks to. Records are
// always verified (footer + CRC32C) before they are handed out.
//
// Reads are asynchronous: Read() issues a batch and returns at once; the
// caller consumes each record from the ReadBatch as it completes.

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/io/aligned_buffer.h"
#include "common/store/landing_record.h"

namespace warp {

struct ExpertKey {
  uint32_t layer = 0;   // decoder layer index
  uint32_t expert = 0;  // routed expert within the layer
  friend bool operator==(const ExpertKey&, const ExpertKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const ExpertKey& key) {
    return H::combine(std::move(h), key.layer, key.expert);
  }
};

// Order in which queued reads are served; mirrors warp.v1.Priority.
enum class Priority { kDemand, kCertain, kLookahead };

// Who hinted a speculative read: a daemon's clients each say theirs, so that
// one's cancel drops only its own hints. kLocalClient is a store's own engine,
// and every client that does not say.
using ClientId = uint64_t;
inline constexpr ClientId kLocalClient = 0;

// How the store answered a request, as the requester sees it; mirrors
// warp.v1.Served. A demand record found in the cache was a hit only if a
// demand had used it before: one that a lookahead (or certain) read brought in
// and no demand has used yet is that prediction's hit, counted apart so that
// "hit" means what the cache alone earned. Joining a read in flight counts as
// the reader's: a demand's is a miss, a lookahead's a lookahead hit.
enum class Served : uint8_t {
  kUnknown,    // a source that does not say (an older daemon)
  kCache,      // resident, and used by a demand (or certain read) before
  kLookahead,  // brought in by a lookahead read, first used now
  kCertain,    // brought in by a certain read, first used now
  kDisk,       // read from disk for this request (or joined such a read)
};
inline constexpr size_t kServedKinds = 5;

// One verified record: `data` points at its bytes, wherever they live (a
// private heap buffer, a slot of the store's shared-memory cache, a client's
// mapping of a daemon's cache). `owner` keeps them valid and is shared by the
// copies of the record: for a cached record it is also the lease that keeps
// the slot resident (never evicted or reused) until the last copy is dropped.
struct ExpertRecord {
  ExpertKey key;
  std::shared_ptr<const void> owner;
  std::span<const std::byte> data;  // record_bytes long
  uint64_t record_bytes = 0;
  Served served = Served::kUnknown;

  std::span<const std::byte> bytes() const { return data.first(record_bytes); }
};

// The completions of one batch of reads, in completion order. Producers call
// Complete() from any thread, exactly once per index.
//
// Thread-safe.
class ReadBatch {
 public:
  explicit ReadBatch(size_t size) : size_(size), completed_(size, false) {}

  size_t size() const { return size_; }

  void Complete(size_t index, absl::StatusOr<ExpertRecord> record);

  // Blocks until the next record completes and returns (index in the batch,
  // result); nullopt once all have been returned.
  std::optional<std::pair<size_t, absl::StatusOr<ExpertRecord>>> Next();

  // Waits for all and returns them in key order.
  std::vector<absl::StatusOr<ExpertRecord>> WaitAll();

  // A producer: record `index` has started landing (at most once, before its
  // completion). Ignored by Next() and forwarded batches.
  void Landing(size_t index, std::shared_ptr<const LandingRecord> landing);

  // What NextArrival returns: a completion (`done`), or a record still
  // landing (`landing`), whose completion comes later.
  struct Arrival {
    size_t index = 0;
    std::optional<absl::StatusOr<ExpertRecord>> done;
    std::shared_ptr<const LandingRecord> landing;
  };
  // Like Next(), but while no completion is queued, returns a record that
  // has started landing and not completed (the first to start first);
  // nullopt once every completion has been returned.
  std::optional<Arrival> NextArrival();

  // Hands every completion, past and future, to `forward` instead of queueing
  // it for Next() (which then must not be used). For sources built on others.
  using Forward = std::function<void(size_t, absl::StatusOr<ExpertRecord>)>;
  void ForwardTo(Forward forward);

 private:
  const size_t size_;
  absl::Mutex mu_;
  std::deque<std::pair<size_t, absl::StatusOr<ExpertRecord>>> done_ ABSL_GUARDED_BY(mu_);
  std::deque<std::pair<size_t, std::shared_ptr<const LandingRecord>>> landing_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> completed_ ABSL_GUARDED_BY(mu_);  // [index]: Complete() was called
  size_t returned_ ABSL_GUARDED_BY(mu_) = 0;
  Forward forward_ ABSL_GUARDED_BY(mu_);
};

// Hands each completion of `part` to `whole`, completion i as whole's
// positions[i]: how a source built on others merges their batches into one.
void ForwardInto(ReadBatch& part, std::shared_ptr<ReadBatch> whole, std::vector<size_t> positions);

// Thread-safe.
class ExpertSource {
 public:
  virtual ~ExpertSource() = default;

  // Issues reads of every key and returns at once. A bad key (unknown,
  // corrupt, I/O error) fails only itself, with a message naming the layer,
  // expert and file or address.
  virtual std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) = 0;

  // Like Read, but a source that would wait for a daemon that went away
  // (common/client/retry.h) fails the keys after one attempt instead: the
  // caller holds another copy of them (a replica) and reads that.
  virtual std::shared_ptr<ReadBatch> ReadOnce(std::span<const ExpertKey> keys, Priority priority) {
    return Read(keys, priority);
  }

  // Hints: fetch these into the source's cache if it has one. Returns at once.
  virtual void Prefetch(std::span<const ExpertKey> keys, Priority priority) {
    (void)keys;
    (void)priority;
  }

  // Drops queued LOOKAHEAD reads of layers <= through_layer that have not
  // started; the engine calls it when a layer has passed. A hint: reads that
  // have started, and DEMAND or CERTAIN reads (a demand joining a queued
  // lookahead read included), are never cancelled. A waiter on a cancelled
  // read gets Cancelled. Returns at once; a source without a queue ignores it.
  virtual void CancelSpeculative(uint32_t through_layer) { (void)through_layer; }

  // Resizes the record cache this process holds (a memory governor's shrink
  // or regrowth); returns the capacity now in force, or nullopt for a source
  // whose cache is not in this process (a daemon's).
  virtual std::optional<uint64_t> ResizeCache(uint64_t bytes) {
    (void)bytes;
    return std::nullopt;
  }

  // Counters as "expertd.store.NAME" -> value (cache_hits, cache_misses,
  // read_bytes_demand, ...); empty if the source keeps none.
  virtual std::map<std::string, uint64_t> Counters() const { return {}; }

  // Blocking convenience: every record, in key order.
  std::vector<absl::StatusOr<ExpertRecord>> ReadAll(std::span<const ExpertKey> keys,
                                                    Priority priority = Priority::kDemand) {
    return Read(keys, priority)->WaitAll();
  }
};

}  // namespace warp
