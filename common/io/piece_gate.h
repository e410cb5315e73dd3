#pragma once

// PieceGate: the pieces one disk has in flight, shared by the readers of one
// store and granted in order: a read of a lower rank first (the store's
// priority: demand before certain before lookahead), and among reads of one
// rank the one that started first. So the reads of a layer's misses land one
// after another, each at the disk's whole speed, instead of all together at
// the end: the engine computes the first while the next is read. And a demand
// read's pieces go out before the rest of a guess that started earlier, and
// a guess a demand has joined is raised to the demand's rank (ReadRank).
// Measured in docs/EFFICIENCY.md ("Pieces granted in order").
//
// Thread-safe.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace warp {

// A read's rank at the gate (lower: sooner), which may be raised while the
// read is under way: a demand joins a guess being read.
// Thread-safe.
class ReadRank {
 public:
  explicit ReadRank(uint32_t rank) : rank_(rank) {}
  uint32_t get() const { return rank_.load(std::memory_order_relaxed); }
  // To `rank` if that is lower; never back. The read's next request for a
  // piece goes in at the new rank.
  void Raise(uint32_t rank) {
    uint32_t now = get();
    while (rank < now && !rank_.compare_exchange_weak(now, rank, std::memory_order_relaxed)) {
    }
  }

 private:
  std::atomic<uint32_t> rank_;
};

class PieceGate {
  using Order = std::pair<uint32_t, uint64_t>;  // rank, then start

 public:
  // `pieces`: how many may be in flight at once over all readers (>= 1).
  explicit PieceGate(uint32_t pieces);
  PieceGate(const PieceGate&) = delete;
  PieceGate& operator=(const PieceGate&) = delete;

  // One read through the gate, from its start to its last piece's landing.
  // Used by the one thread that runs the read.
  class Read {
   public:
    // `rank` must outlive the Read; it is followed as it is raised.
    Read(PieceGate* gate, const ReadRank& rank, uint64_t pieces);
    ~Read();
    Read(const Read&) = delete;
    Read& operator=(const Read&) = delete;

    // Takes a piece if the gate grants it now; with `wait`, waits until it
    // does. Every piece taken must be given back by Landed.
    bool Take(bool wait);
    void Landed();
    // A piece (or its rest) to send again: it wants one more grant.
    void Again();

   private:
    // The order the read wants now: its rank may have been raised since
    // order_ was filed.
    Order Wanted() const { return {std::min(rank_->get(), order_.first), order_.second}; }
    // Files the read at Wanted() if it was raised.
    void Follow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(gate_->mu_);

    PieceGate* gate_;
    const ReadRank* rank_;
    Order order_;  // as filed in wanting_: rank, then start
  };

  uint32_t capacity() const { return capacity_; }

 private:
  // A piece is free and no read before `wanted` wants one (the asking read's
  // own entry lies at or after it: after, if raised and not yet followed).
  bool Grantable(Order wanted) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t capacity_;
  mutable absl::Mutex mu_;
  uint32_t free_ ABSL_GUARDED_BY(mu_);
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;
  // Every read under way, in grant order, with the pieces it has yet to send.
  std::map<Order, uint64_t> wanting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warp
