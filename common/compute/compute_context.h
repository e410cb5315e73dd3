#pragma once

// ComputeContext: what the kinds (mixers, FFNs, routers) compute with — the
// thread pool that splits their work by output rows, and the session's
// choices of arithmetic, the ones that change bits (8-bit activations for
// weights that have that path). A device tier adds its handle here and a
// second factory per kind; the kinds never take a bare ThreadPool.
//
// Thread-compatible: built before the engine, then read on the forward
// pass's thread (ParallelFor is the pool's contract).

#include <cstddef>
#include <functional>

#include "common/compute/thread_pool.h"

namespace warp {

// The arithmetic a session chooses for its kernels; two sessions of one
// process may choose differently.
struct Arithmetic {
  // --activations q8: Linear takes kernels::MatMulRowsQ8 where the weight's
  // format has an 8-bit-activation path (kernels::HasQ8Path).
  bool q8_activations = false;
};

class ComputeContext {
 public:
  ComputeContext(ThreadPool& pool, Arithmetic arithmetic) : pool_(pool), arithmetic_(arithmetic) {}

  bool q8_activations() const { return arithmetic_.q8_activations; }

  // The pool's ParallelFor (thread_pool.h).
  void ParallelFor(size_t n, size_t grain, const std::function<void(size_t, size_t)>& fn) const {
    pool_.ParallelFor(n, grain, fn);
  }

 private:
  ThreadPool& pool_;
  const Arithmetic arithmetic_;
};

}  // namespace warp
