#include "computed/run/sources.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/byte_size.h"
#include "common/client/fanout_source.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"
#include "common/compute/math_fingerprint.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/store/expert_store.h"

namespace warp::computed {
namespace {

// The embedded store of a bank dir: the options' knobs, `cache_bytes` its share.
ExpertStore::Options EmbeddedStoreOptions(const SourceOptions& options, uint64_t cache_bytes) {
  ExpertStore::Options store = options.store;
  store.cache_bytes = cache_bytes;
  return store;
}

std::vector<ExpertKey> HeldKeys(const Container& container) {
  std::vector<ExpertKey> keys;
  for (const BankEntry& bank : container.manifest().banks) {
    for (uint32_t expert : container.HeldExperts(bank)) keys.push_back({bank.layer, expert});
  }
  return keys;
}

absl::Status CheckFingerprint(uint64_t want, uint64_t got, const std::string& where) {
  if (want == got) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(where, ": holds model ", FingerprintHex(got), ", not ", FingerprintHex(want)));
}

absl::StatusOr<FanoutExpertSource::Member> BankMember(const std::string& dir, uint64_t fingerprint,
                                                      const SourceOptions& options,
                                                      uint64_t cache_bytes) {
  WARP_ASSIGN_OR_RETURN(std::shared_ptr<const Container> shard, Container::Open(dir));
  WARP_RETURN_IF_ERROR(CheckFingerprint(fingerprint, shard->manifest().fingerprint, dir));
  std::vector<ExpertKey> held = HeldKeys(*shard);
  WARP_ASSIGN_OR_RETURN(auto store,
                        ExpertStore::Open(shard, EmbeddedStoreOptions(options, cache_bytes)));
  Logger("store").info("{}: {}", dir, store->Settings());
  return FanoutExpertSource::Member{.name = dir, .source = std::move(store), .held = held};
}

// A daemon: the zero-copy fast path for fastpath:PATH, gRPC otherwise.
// `computer`: its Compute RPC (gRPC), or null (the fast path has none).
absl::StatusOr<std::unique_ptr<ExpertSource>> ConnectStore(const std::string& address,
                                                           const SourceOptions& options,
                                                           v1::DescribeReply& description,
                                                           ExpertComputer*& computer) {
  computer = nullptr;
  WARP_RETURN_IF_ERROR(CheckStoreAddress(address));
  if (absl::StartsWith(address, "fastpath:")) {
    WARP_ASSIGN_OR_RETURN(
        auto client,
        UdsExpertSource::Connect({.address = address,
                                  .retry_deadline = options.store_retry_deadline,
                                  .verify_every_read = options.store.banks.verify_every_read}));
    description = client->description();
    return client;
  }
  WARP_ASSIGN_OR_RETURN(
      auto client, GrpcExpertSource::Connect({.address = address,
                                              .tls = options.tls,
                                              .retry_deadline = options.store_retry_deadline}));
  description = client->description();
  if (description.max_compute_rows() > 0) {
    if (description.math_fingerprint() == MathFingerprint()) {
      computer = client.get();
    } else {
      // A daemon whose libm rounds exp or tanh otherwise would change the bits.
      Logger("store").warn(
          "expertd at {} computes the experts' activations with other bits than this machine "
          "(math fingerprint {:016x}, here {:016x}: another libm or build); its experts are "
          "read as records",
          address, description.math_fingerprint(), MathFingerprint());
    }
  }
  return client;
}

// A daemon on this machine: its cache is RAM the run's budget must cover.
bool IsLocalStore(const std::string& address) {
  if (!absl::StartsWith(address, "tcp:") && !absl::StartsWith(address, "tls:")) {
    return true;  // unix:, fastpath:
  }
  return IsLoopbackHost(HostOfHostPort(std::string_view(address).substr(4)));
}

}  // namespace

absl::Status CheckStoreAddress(const std::string& address) {
  const size_t colon = address.find(':');
  const std::string scheme = colon == std::string::npos ? "" : address.substr(0, colon);
  const std::string_view rest =
      colon == std::string::npos ? std::string_view() : std::string_view(address).substr(colon + 1);
  auto refuse = [&](std::string why) {
    return absl::InvalidArgumentError(absl::StrCat("--stores ", address, ": ", why));
  };
  if (scheme == "unix" || scheme == "fastpath") {
    if (rest.empty()) return refuse(absl::StrCat("expected ", scheme, ":PATH"));
    return absl::OkStatus();
  }
  if (scheme != "tcp" && scheme != "tls") {
    return refuse("expected unix:PATH, fastpath:PATH, tls:HOST:PORT or tcp:HOST:PORT");
  }
  const size_t port = rest.rfind(':');
  if (port == std::string_view::npos || port == 0 || port + 1 == rest.size()) {
    return refuse(absl::StrCat("expected ", scheme, ":HOST:PORT"));
  }
  if (scheme == "tcp" && !IsLoopbackHost(HostOfHostPort(rest))) {
    return refuse(
        "plain TCP beyond loopback carries records, their checksums and the model's "
        "fingerprint in the clear and without a token, so anyone on the path could forge "
        "them; use tls:HOST:PORT with --tls-ca and --token-file (deploy/README.md)");
  }
  return absl::OkStatus();
}

absl::Status CheckLocalDaemonCaches(const LocalDaemonCaches& local, uint64_t cache_bytes) {
  uint64_t total = 0;
  std::string each;
  for (const auto& [address, bytes] : local) {
    total += bytes;
    absl::StrAppend(&each, each.empty() ? "" : ", ", address, " ", FormatBytes(bytes));
  }
  if (total <= cache_bytes) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "the local expertd caches hold ", FormatBytes(total), " (", each, ") but the budget leaves ",
      FormatBytes(cache_bytes), " for the expert cache; restart them with --budget ",
      FormatBytes(cache_bytes / local.size()), " each (computed plan --daemons ", local.size(),
      ") or give computed a larger --budget"));
}

BudgetDecision BudgetOverLocalDaemons(const PlanFigures& plan, const LocalDaemonCaches& local) {
  uint64_t daemons = 0;
  for (const auto& [address, bytes] : local) daemons += bytes;
  return BudgetDecision{
      .budget_bytes = plan.fixed_bytes() + daemons,
      .cache_bytes = daemons,
      .rule = absl::StrCat("trunk + KV + the ", local.size(), " local expertd caches (",
                           FormatBytes(daemons), "), counted once: the daemons hold them")};
}

namespace {

absl::StatusOr<FanoutExpertSource::Member> StoreMember(const std::string& address,
                                                       const SourceOptions& options,
                                                       uint64_t fingerprint,
                                                       uint64_t& cache_bytes) {
  v1::DescribeReply description;
  ExpertComputer* computer = nullptr;
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<ExpertSource> client,
                        ConnectStore(address, options, description, computer));
  WARP_RETURN_IF_ERROR(
      CheckFingerprint(fingerprint, description.model_fingerprint(), "expertd at " + address));
  cache_bytes = description.cache_bytes();
  std::vector<ExpertKey> held;
  for (const v1::BankInfo& bank : description.banks()) {
    for (uint32_t expert : bank.experts()) held.push_back({bank.layer(), expert});
  }
  Logger("store").info("expertd at {}: {} experts, cache {}, disk {}", address, held.size(),
                       FormatBytes(description.cache_bytes()),
                       description.disk_read_bytes_per_second() == 0
                           ? std::string("not measured")
                           : FormatBytes(description.disk_read_bytes_per_second()) + "/s");
  std::vector<uint32_t> engram_layers;
  for (const v1::EngramTableInfo& table : description.engram_tables()) {
    engram_layers.push_back(table.layer());
  }
  return FanoutExpertSource::Member{.name = address,
                                    .source = std::move(client),
                                    .held = held,
                                    .engram_layers = engram_layers,
                                    .computer = computer};
}

}  // namespace

absl::StatusOr<ExpertCompute> ParseExpertCompute(std::string_view name) {
  if (name == "auto") return ExpertCompute::kAuto;
  if (name == "records") return ExpertCompute::kRecords;
  if (name == "daemons") return ExpertCompute::kDaemons;
  return absl::InvalidArgumentError(absl::StrCat("--expert-compute ", std::string(name),
                                                 ": expected auto, records or daemons"));
}

absl::StatusOr<bool> ComputeOnDaemons(const SourceOptions& options, bool every_member_computes,
                                      const LocalDaemonCaches& local_daemons) {
  auto& log = Logger("store");
  switch (options.expert_compute) {
    case ExpertCompute::kRecords:
      return false;
    case ExpertCompute::kDaemons:
      if (!every_member_computes) {
        return absl::FailedPreconditionError(
            "--expert-compute daemons: every expert source must be an expertd over gRPC "
            "(unix:, tcp: or tls:) that has the Compute RPC and this machine's math "
            "fingerprint (see the warnings above); bank directories and fastpath: stores only "
            "give records");
      }
      log.info("experts computed on the daemons (--expert-compute daemons)");
      return true;
    case ExpertCompute::kAuto:
      break;
  }
  // A daemon across a network: a record (megabytes) costs far more of the
  // link than the rows it multiplies (kilobytes), so send the rows. On this
  // machine the records come through shared memory or loopback, and this
  // process's threads are the daemons' too.
  const bool across_network =
      every_member_computes && !options.stores.empty() && local_daemons.empty();
  if (across_network) {
    log.info("experts computed on the daemons: every store is across a network "
             "(--expert-compute records reads their records instead)");
  } else if (!options.stores.empty()) {
    log.info("expert records read from the stores{} (--expert-compute daemons computes there)",
             local_daemons.empty() ? "" : ", some of which are on this machine");
  }
  return across_network;
}

std::vector<std::string> SplitList(const std::string& text) {
  std::vector<std::string> items;
  for (absl::string_view piece : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    items.emplace_back(piece);
  }
  return items;
}

absl::StatusOr<OpenedSource> OpenExpertSource(std::shared_ptr<const Container> model,
                                              const SourceOptions& options) {
  const uint64_t fingerprint = model->manifest().fingerprint;
  if (options.bank_dirs.empty() && options.stores.empty()) {
    // `--expert-compute daemons` with no daemon is refused, not run here.
    WARP_RETURN_IF_ERROR(ComputeOnDaemons(options, false, {}).status());
    WARP_ASSIGN_OR_RETURN(auto store, ExpertStore::Open(std::move(model), options.store));
    Logger("store").info("embedded: {}", store->Settings());
    return OpenedSource{.source = std::move(store),
                        .embedded_cache_bytes = options.store.cache_bytes};
  }
  std::vector<FanoutExpertSource::Member> members;
  const uint64_t per_dir =
      options.bank_dirs.empty() ? 0 : options.store.cache_bytes / options.bank_dirs.size();
  for (const std::string& dir : options.bank_dirs) {
    WARP_ASSIGN_OR_RETURN(auto member, BankMember(dir, fingerprint, options, per_dir));
    members.push_back(std::move(member));
  }
  OpenedSource opened{.embedded_cache_bytes = per_dir * options.bank_dirs.size()};
  for (const std::string& address : options.stores) {
    uint64_t cache_bytes = 0;
    WARP_ASSIGN_OR_RETURN(auto member, StoreMember(address, options, fingerprint, cache_bytes));
    for (uint32_t layer : member.engram_layers) opened.engram_servers[layer].push_back(address);
    members.push_back(std::move(member));
    if (IsLocalStore(address)) opened.local_daemons.emplace_back(address, cache_bytes);
  }
  bool every_member_computes = !members.empty();
  for (const FanoutExpertSource::Member& member : members) {
    every_member_computes &= member.computer != nullptr;
  }
  WARP_ASSIGN_OR_RETURN(auto fanout, FanoutExpertSource::Create(std::move(members)));
  WARP_ASSIGN_OR_RETURN(const bool on_daemons,
                        ComputeOnDaemons(options, every_member_computes, opened.local_daemons));
  if (on_daemons) opened.computer = fanout.get();
  opened.source = std::move(fanout);
  return opened;
}

absl::StatusOr<std::unique_ptr<EngramStore>> OpenEngramStore(
    std::shared_ptr<const Container> model, const SourceOptions& options, OpenedSource& opened) {
  const std::vector<EngramTableEntry> tables = model->manifest().engram;
  if (tables.empty()) return nullptr;
  const EngramStore::Options store{.cache_bytes = options.engram_cache_bytes};
  if (options.stores.empty()) return EngramStore::Open(std::move(model), store);
  for (const EngramTableEntry& table : tables) {
    if (opened.engram_servers.contains(table.layer)) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "the engram table of layer ", table.layer, " (", table.file, ") is served by none of --stores ",
        absl::StrJoin(options.stores, ","),
        "; an expertd serves the engram tables its container directory holds"));
  }
  return std::make_unique<EngramStore>(tables, *opened.source, store);
}

}  // namespace warp::computed
