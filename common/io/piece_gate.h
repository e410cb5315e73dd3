#pragma once

// PieceGate: the pieces one disk has in flight, shared by the readers of one
// store and granted in order: a read of a lower rank first (the store's
// priority: demand before certain before lookahead), and among reads of one
// rank the one that started first. So the reads of a layer's misses land one
// after another, each at the disk's whole speed, instead of all together at
// the end: the engine computes the first while the next is read. And a demand
// read's pieces go out before the rest of a guess that started earlier.
// Measured in docs/EFFICIENCY.md ("Pieces granted in order").
//
// Thread-safe.

#include <cstdint>
#include <map>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace warp {

class PieceGate {
 public:
  // `pieces`: how many may be in flight at once over all readers (>= 1).
  explicit PieceGate(uint32_t pieces);
  PieceGate(const PieceGate&) = delete;
  PieceGate& operator=(const PieceGate&) = delete;

  // One read through the gate, from its start to its last piece's landing.
  // Used by the one thread that runs the read.
  class Read {
   public:
    Read(PieceGate* gate, uint32_t rank, uint64_t pieces);
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
    PieceGate* gate_;
    std::pair<uint32_t, uint64_t> order_;  // rank, then start
  };

  uint32_t capacity() const { return capacity_; }

 private:
  bool Grantable(std::pair<uint32_t, uint64_t> order) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint32_t capacity_;
  mutable absl::Mutex mu_;
  uint32_t free_ ABSL_GUARDED_BY(mu_);
  uint64_t started_ ABSL_GUARDED_BY(mu_) = 0;
  // Every read under way, in grant order, with the pieces it has yet to send.
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> wanting_ ABSL_GUARDED_BY(mu_);
};

}  // namespace warp
