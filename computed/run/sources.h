#pragma once

// Builds the ExpertSource a run reads experts through: the embedded
// ExpertStore over the model's own banks (the default), embedded stores over
// shard directories (--banks, or WARP_BANK_SHARDS), or expertd daemons
// (--stores), fanned out by which member holds which expert. Every member
// must hold the model's fingerprint. The caches of the daemons on this
// machine (unix:, fastpath:, tcp: to loopback) are reported, for the budget
// to count them (CheckLocalDaemonCaches, BudgetOverLocalDaemons).

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/compute/expert_computer.h"
#include "common/format/container.h"
#include "common/store/engram_store.h"
#include "common/store/expert_source.h"
#include "common/store/expert_store.h"
#include "common/wire/lan_auth.h"
#include "computed/planner/planner.h"

namespace warp::computed {

// Where a run's routed experts are computed (--expert-compute): here, from
// records (kRecords); on the daemons that hold them, from the rows sent
// (kDaemons, the Compute RPC); kAuto: on the daemons when every store is an
// expertd across a network, else records.
enum class ExpertCompute { kAuto, kRecords, kDaemons };

absl::StatusOr<ExpertCompute> ParseExpertCompute(std::string_view name);

struct SourceOptions {
  std::vector<std::string> bank_dirs;  // shard directories of the model, read in-process
  std::vector<std::string>
      stores;  // expertd: unix:PATH, tls:HOST:PORT, tcp:HOST:PORT, fastpath:PATH
  // The knobs of the embedded stores (the model's own banks, or one per bank
  // dir), passed whole; their flags: common/store/store_flags.h. cache_bytes
  // is the budget's share, which the bank dirs' stores split. fastpath:
  // clients check CRCs as banks.verify_every_read says.
  ExpertStore::Options store = ExpertStore::EmbeddedOptions();
  TlsClientFiles tls;  // what tls: stores are shown
  // How long a store that went away is waited for (--store-retry-seconds);
  // unset: 30 s for unix:/fastpath:, 60 s for tcp:/tls: (common/client/retry.h).
  std::optional<std::chrono::milliseconds> store_retry_deadline;
  // The engram tables' own cache (DeepSeek V4.1, common/store/engram_store.h)
  // in this process (--engram-cache-mib), in front of the container's files,
  // or of the expertds when there are --stores.
  uint64_t engram_cache_bytes = EngramStore::Options{}.cache_bytes;
  ExpertCompute expert_compute = ExpertCompute::kAuto;
};

// Splits "a,b,c" (empty pieces dropped).
std::vector<std::string> SplitList(const std::string& text);

// A --stores address, checked before anything connects: a known scheme with
// its parts, and plain TCP on loopback only (beyond it, a rogue server could
// forge records, their CRCs and the model's fingerprint, and no token is sent).
absl::Status CheckStoreAddress(const std::string& address);

// The caches of expertd daemons on this machine, by address: RAM they hold
// once, however many processes read through them.
using LocalDaemonCaches = std::vector<std::pair<std::string, uint64_t>>;

struct OpenedSource {
  std::unique_ptr<ExpertSource> source;
  LocalDaemonCaches local_daemons;    // among the --stores
  uint64_t embedded_cache_bytes = 0;  // what the bank dirs' embedded caches took of cache_bytes
  // The --stores serving each engram table, by the table's layer.
  std::map<uint32_t, std::vector<std::string>> engram_servers;
  // Where the routed experts are computed when not here (ExpertCompute):
  // `source` itself, or null.
  ExpertComputer* computer = nullptr;
};

// Whether the experts are computed on the daemons, per options.expert_compute
// (said in the log); FailedPrecondition for kDaemons when a member cannot.
absl::StatusOr<bool> ComputeOnDaemons(const SourceOptions& options, bool every_member_computes,
                                      const LocalDaemonCaches& local_daemons);

absl::StatusOr<OpenedSource> OpenExpertSource(std::shared_ptr<const Container> model,
                                              const SourceOptions& options);

// The engram tables' records of a model that has them (nullptr otherwise):
// read from the model's files, or, when there are --stores, through
// `opened.source` from the expertds, each table from those that serve it
// (FailedPrecondition, naming the table, if none does).
absl::StatusOr<std::unique_ptr<EngramStore>> OpenEngramStore(
    std::shared_ptr<const Container> model, const SourceOptions& options, OpenedSource& opened);

// A --budget covers the local daemons' caches: together they may hold at
// most `cache_bytes`, what it leaves for experts, else the machine could
// page. FailedPrecondition saying how to fix it.
absl::Status CheckLocalDaemonCaches(const LocalDaemonCaches& local, uint64_t cache_bytes);

// The default budget of a run whose experts all come through local daemons:
// trunk + KV of this process plus the daemons' caches, counted once (the
// daemons hold that memory, and a second process reading through them adds
// only its own trunk and KV). The machine's default budget must have been
// resolved first: its floor checks that trunk + KV + one working set fit.
BudgetDecision BudgetOverLocalDaemons(const PlanFigures& plan, const LocalDaemonCaches& local);

}  // namespace warp::computed
