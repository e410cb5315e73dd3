#pragma once

// ComputeHandler: the Compute RPC's work, whichever transport carries it.
// Checks a request against the manifest (layer, width, rows, experts held,
// the math), reads the union of its experts through the store as DEMAND
// reads (in waves when the cache holds fewer records), runs each expert's
// math (common/compute/expert_math.h, the client's own code and arithmetic)
// over its rows as its record arrives (a miss as its pieces land,
// compute_arrivals.h) and hands each expert's output to the transport as soon
// as its verified record has come.
//
// Thread-safe. One request computes at a time on the handler's pool; the
// others wait their turn, so memory is bounded by one request's rows, one
// wave's outputs and scratch, and the records of one wave.

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/compute/compute_context.h"
#include "common/compute/math_fingerprint.h"
#include "common/compute/thread_pool.h"
#include "common/store/expert_store.h"
#include "warp/v1/expert_service.pb.h"

namespace warp::expertd {

class ComputeHandler {
 public:
  struct Options {
    uint32_t threads = 1;     // >= 1
    uint32_t max_rows = 256;  // rows a request may carry, >= 1
    // What Describe states of its math (MathFingerprint() unless set: a test
    // stands for a daemon on a machine whose libm differs).
    std::optional<uint64_t> math_fingerprint;
  };

  // REQUIRES: `store` outlives the handler.
  ComputeHandler(ExpertStore& store, const Options& options);

  uint32_t max_rows() const { return options_.max_rows; }
  uint32_t threads() const { return options_.threads; }
  uint64_t math_fingerprint() const { return math_fingerprint_; }
  // The largest request a transport must accept: max_rows of the widest
  // layer's rows, plus room for the expert lists.
  uint64_t max_request_bytes() const;

  // Receives expert `index`'s output rows (of ComputeRequest.experts) and how
  // its record was served; false if the client has gone (the call then ends).
  using Emit =
      absl::FunctionRef<bool(uint32_t index, std::span<const float> output, Served served)>;

  // Computes `request` (its fingerprint checked by the caller), calling
  // `emit` once per expert. InvalidArgument naming the field for a request
  // that does not fit the manifest or the limits (nothing is read then);
  // NotFound for an expert this daemon does not hold; a record's own failure
  // (DataLoss, an I/O error) as the store reports it; Cancelled if `emit`
  // says the client has gone.
  absl::Status Compute(const v1::ComputeRequest& request, Emit emit);

  // "expertd.compute.NAME" -> value: requests, rows, expert_rows, refused.
  std::map<std::string, uint64_t> Counters() const;

 private:
  const BankEntry* Bank(uint32_t layer) const;
  absl::Status Check(const v1::ComputeRequest& request, const BankEntry* bank) const;

  ExpertStore& store_;
  const Options options_;
  const uint64_t math_fingerprint_ = options_.math_fingerprint.value_or(MathFingerprint());
  ThreadPool pool_;
  ComputeContext plain_, q8_;
  absl::Mutex turn_;  // held while a request computes
  std::atomic<uint64_t> requests_{0}, rows_{0}, expert_rows_{0}, refused_{0};
};

}  // namespace warp::expertd
