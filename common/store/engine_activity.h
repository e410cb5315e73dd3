#pragma once

// EngineActivity: what this process's engine is doing, as far as an embedded
// store's prefault thread cares (ExpertStore::Options::prefault_cache). The
// prefault faults fresh memory in while the engine decodes or waits for
// reads, and pauses while a prefill pass computes: on a VM that backs guest
// memory lazily, faulting it in beside a prefill's expert compute slowed that
// compute 1.9-2.8x, even from an idle-priority thread, while pausing it through
// decode as well cost the cache its growth (hits 3-11% against 24-28%). See
// docs/EFFICIENCY.md, "Fresh memory faulted in beside a prefill".
// Process-wide on purpose: the cores are the process's, and two sessions of
// the C API share them.
//
// Thread-safe.

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace warp {

class EngineActivity {
 private:  // first: the public scope types below name these counters
  // While it lives, `activity`'s `*kCount` is one higher.
  template <int EngineActivity::*kCount>
  class Mark {
   public:
    explicit Mark(EngineActivity& activity = Process());
    ~Mark();
    Mark(const Mark&) = delete;
    Mark& operator=(const Mark&) = delete;

   private:
    EngineActivity& activity_;
  };

  absl::Mutex mu_;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  int prefills_ ABSL_GUARDED_BY(mu_) = 0;

 public:
  // The process's one instance.
  static EngineActivity& Process();

  // While it lives: the calling thread is blocked waiting for expert reads.
  using Waiting = Mark<&EngineActivity::waiting_>;

  // While it lives: a prefill pass (a chunk of two tokens or more) computes.
  using Prefill = Mark<&EngineActivity::prefills_>;

  // Blocks until fresh memory may be faulted in (no prefill pass computes, or
  // a thread waits for reads) or `timeout` has passed; true if it may.
  bool AwaitPrefaultAllowed(absl::Duration timeout);

 private:
  bool PrefaultAllowed() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return prefills_ == 0 || waiting_ > 0;
  }
};

extern template class EngineActivity::Mark<&EngineActivity::waiting_>;
extern template class EngineActivity::Mark<&EngineActivity::prefills_>;

}  // namespace warp
