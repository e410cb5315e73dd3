#pragma once

// Builds the ExpertSource a run reads experts through: the embedded
// ExpertStore over the model's own banks (the default), embedded stores over
// shard directories (--banks, or WARP_BANK_SHARDS), or expertd daemons
// (--stores), fanned out by which member holds which expert. Every member
// must hold the model's fingerprint, and the caches of the daemons on this
// machine (unix:, fastpath:, tcp: to loopback) must fit in the budget's cache
// share, so that a run with local daemons cannot page either.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/store/bank_set.h"
#include "common/store/eviction_order.h"
#include "common/store/expert_source.h"
#include "common/wire/lan_auth.h"

namespace warp::computed {

struct SourceOptions {
  std::vector<std::string> bank_dirs;  // shard directories of the model, read in-process
  std::vector<std::string>
      stores;                // expertd: unix:PATH, tls:HOST:PORT, tcp:HOST:PORT, fastpath:PATH
  uint64_t cache_bytes = 0;  // the budget's cache share: the bank dirs' embedded
                             // caches split it; local daemons must fit in the rest
  uint32_t io_threads = 4;   // per embedded store
  EvictionPolicy cache_policy = EvictionPolicy::kLfru;  // of the embedded stores' caches
  IoBackend io_backend = kDefaultIoBackend;             // of the embedded stores
  bool verify_every_read = false;                       // of the embedded stores (CRC32C)
  TlsClientFiles tls;                                   // what tls: stores are shown
  // How long a store that went away is waited for (--store-retry-seconds);
  // unset: 30 s for unix:/fastpath:, 60 s for tcp:/tls: (common/client/retry.h).
  std::optional<std::chrono::milliseconds> store_retry_deadline;
};

// Splits "a,b,c" (empty pieces dropped).
std::vector<std::string> SplitList(const std::string& text);

absl::StatusOr<std::unique_ptr<ExpertSource>> OpenExpertSource(
    std::shared_ptr<const Container> model, const SourceOptions& options);

}  // namespace warp::computed
