#include "expertd/serve.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/algorithm/container.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/byte_size.h"
#include "common/format/container.h"
#include "common/io/disk_probe.h"
#include "common/io/file.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/store/engram_store.h"
#include "common/store/expert_store.h"
#include "common/wire/lan_auth.h"
#include "expertd/compute_handler.h"
#include "expertd/grpc_service.h"
#include "expertd/request_handler.h"
#include "expertd/socket_path.h"
#include "expertd/uds_server.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/grpcpp.h"

namespace warp::expertd {
namespace {

constexpr uint32_t kMaxIoThreads = 1024;
constexpr uint32_t kMaxStagingSlots = 1024;
constexpr uint32_t kMaxComputeRows = 4096;

// Keeps the first parse error of a textproto, with its position.
class FirstError : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (error.empty()) error = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  std::string error;
};

struct Listener {
  std::string spec;     // as configured: unix:PATH, tcp:HOST:PORT or fastpath:PATH
  std::string address;  // as gRPC wants it (empty for fastpath)
  std::string socket_path;
  int port = 0;           // the port gRPC bound, for tcp
  bool fastpath = false;  // served by a UdsServer, not gRPC
};

absl::StatusOr<Listener> ParseListen(const std::string& spec) {
  if (absl::StartsWith(spec, "fastpath:")) {
    const std::string path = spec.substr(9);
    if (path.empty() || path.size() > 107) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen ", spec, ": a Unix socket path needs 1 to 107 bytes"));
    }
    return Listener{.spec = spec, .socket_path = path, .fastpath = true};
  }
  if (absl::StartsWith(spec, "unix:")) {
    const std::string path = spec.substr(5);
    if (path.empty() || path.size() > 107) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen ", spec, ": a Unix socket path needs 1 to 107 bytes"));
    }
    return Listener{.spec = spec, .address = spec, .socket_path = path};
  }
  if (absl::StartsWith(spec, "tcp:") && spec.rfind(':') > 4) {
    const std::string port = spec.substr(spec.rfind(':') + 1);
    uint32_t number = 0;
    if (!absl::SimpleAtoi(port, &number) || number > 65535) {
      return absl::InvalidArgumentError(
          absl::StrCat("--listen ", spec, ": port \"", port, "\" is not 0 to 65535"));
    }
    return Listener{.spec = spec, .address = spec.substr(4)};
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--listen ", spec, ": expected unix:PATH, tcp:HOST:PORT or fastpath:PATH"));
}

// What a drain gives the requests in flight before it cancels them (the unit's
// TimeoutStopSec=30s leaves room for it).
constexpr absl::Duration kDrainGrace = absl::Seconds(10);
// Once no call is in a handler: time for a call that raced the drain to be
// refused (UNAVAILABLE, which clients retry) rather than cancelled.
constexpr std::chrono::milliseconds kCloseGrace(100);

// The sync server keeps one thread waiting for new calls and lets at most
// two idle ones stay (gRPC's defaults; one, measured with daemon_load.sh,
// halved small-record throughput by making a thread per call). A call takes
// the waiting thread, which is replaced from the quota of max_grpc_calls + 1;
// when none is left the call is refused (RESOURCE_EXHAUSTED).
constexpr int kGrpcMaxIdleThreads = 2;

// Starts gRPC on the unix: and tcp: listeners, recording the bound tcp ports;
// null if there are none (a fast-path-only daemon).
absl::StatusOr<std::unique_ptr<grpc::Server>> StartGrpc(ExpertServiceImpl& service,
                                                        const v1::ExpertdConfig& config,
                                                        uint64_t max_request_bytes,
                                                        std::vector<Listener>& listeners) {
  grpc::ServerBuilder builder;
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_request_bytes));
  // gRPC sets SO_REUSEPORT by default: a second daemon would silently share
  // the port and take half the connections. Refuse instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Bounds: a thread per call up to max_grpc_calls (then RESOURCE_EXHAUSTED),
  // idle connections closed (clients reconnect), dead peers found by pings.
  grpc::ResourceQuota quota("expertd");
  quota.SetMaxThreads(static_cast<int>(config.max_grpc_calls()) + 1);
  builder.SetResourceQuota(quota);
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS,
                              kGrpcMaxIdleThreads);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONNECTION_IDLE_MS,
                             static_cast<int>(config.idle_timeout_seconds()) * 1000);
  // A quarter of the calls per connection (at least 16): one peer's streams
  // (300 with a zero window took every thread for 10 s, the probe of issue
  // 44) leave the others threads; more streams wait in the peer's HTTP/2
  // queue. Below 64 calls the quota's RESOURCE_EXHAUSTED bounds them first.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             std::max(16, static_cast<int>(config.max_grpc_calls()) / 4));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, 60'000);
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 20'000);
  std::shared_ptr<grpc::ServerCredentials> tcp_credentials = grpc::InsecureServerCredentials();
  if (!config.tls_cert().empty()) {  // NormalizeConfig: key and token too
    WARP_ASSIGN_OR_RETURN(tcp_credentials,
                          TlsServerCredentials({.cert = config.tls_cert(),
                                                .key = config.tls_key(),
                                                .client_ca = config.tls_client_ca(),
                                                .token_file = config.token_file()}));
  }
  std::string specs;
  for (Listener& listener : listeners) {
    if (listener.fastpath) continue;
    if (!listener.socket_path.empty()) {
      WARP_RETURN_IF_ERROR(
          Annotate(ClaimSocketPath(listener.socket_path), "cannot listen on " + listener.spec));
    }
    // Unix sockets: their file mode says who may connect.
    builder.AddListeningPort(
        listener.address,
        listener.socket_path.empty() ? tcp_credentials : grpc::InsecureServerCredentials(),
        listener.socket_path.empty() ? &listener.port : nullptr);
    absl::StrAppend(&specs, specs.empty() ? "" : ", ", listener.spec);
  }
  if (specs.empty()) return nullptr;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) {
    for (const Listener& listener : listeners) {
      if (listener.fastpath || !listener.socket_path.empty()) continue;
      WARP_RETURN_IF_ERROR(
          Annotate(ProbeTcpListen(listener.address), "cannot listen on " + listener.spec));
    }
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", specs, " (address in use, or no permission?)"));
  }
  for (const Listener& listener : listeners) {
    if (listener.fastpath) continue;
    if (listener.socket_path.empty() && listener.port == 0) {
      server->Shutdown();
      return absl::UnavailableError(absl::StrCat("cannot listen on ", listener.spec));
    }
    if (!listener.socket_path.empty()) ::chmod(listener.socket_path.c_str(), config.socket_mode());
  }
  return server;
}

// TCP is closed by default: a tcp: listener needs TLS and a token, or
// --insecure on a loopback address.
absl::Status CheckTcpSecurity(const v1::ExpertdConfig& config) {
  const bool tls = !config.tls_cert().empty() || !config.tls_key().empty();
  if (tls && (config.tls_cert().empty() || config.tls_key().empty())) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
  }
  if (!config.tls_client_ca().empty() && !tls) {
    return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
  }
  if (tls != !config.token_file().empty()) {
    return absl::InvalidArgumentError(
        tls ? "TLS needs a --token-file too: the token says who may read the model"
            : "--token-file needs --tls-cert and --tls-key: a token over plain TCP travels in "
              "clear");
  }
  if (tls && config.insecure()) {
    return absl::InvalidArgumentError("--insecure and --tls-cert contradict each other");
  }
  for (const std::string& spec : config.listen()) {
    if (!absl::StartsWith(spec, "tcp:") || tls) continue;
    const bool loopback = IsLoopbackHost(HostOfHostPort(spec.substr(4)));
    if (config.insecure() && loopback) continue;
    return absl::InvalidArgumentError(
        config.insecure()
            ? absl::StrCat("--listen ", spec,
                           ": --insecure serves plain TCP on loopback addresses only; a LAN "
                           "address needs --tls-cert, --tls-key and --token-file "
                           "(deploy/README.md)")
            : absl::StrCat("--listen ", spec,
                           ": TCP needs TLS and a token: add --tls-cert FILE --tls-key FILE "
                           "--token-file FILE (deploy/README.md)",
                           loopback ? ", or --insecure for plain TCP on loopback" : ""));
  }
  return absl::OkStatus();
}

// The disk's large O_DIRECT reads over the bank files, for Describe (clients
// log it per store) and the daemon's log; 0 if it cannot be measured.
uint64_t ProbeDisk(const Container& container) {
  auto& log = Logger("expertd");
  std::vector<std::filesystem::path> files;
  for (const BankEntry& bank : container.manifest().banks) files.push_back(container.BankPath(bank));
  absl::StatusOr<DiskProbe> probe = ProbeDiskReads(files, {});
  if (!probe.ok()) {
    log.warn("disk not measured: {}", std::string(probe.status().message()));
    return 0;
  }
  log.info("disk: {}/s ({} of its bank files read in {:.3f} s{})",
           FormatBytes(static_cast<uint64_t>(probe->bytes_per_second())), FormatBytes(probe->bytes),
           probe->seconds, probe->direct ? " with O_DIRECT" : ", not O_DIRECT: the page cache");
  return static_cast<uint64_t>(probe->bytes_per_second());
}

}  // namespace

absl::StatusOr<v1::ExpertdConfig> LoadConfig(const std::string& path) {
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  v1::ExpertdConfig config;
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &config)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", errors.error));
  }
  return config;
}

absl::StatusOr<v1::ExpertdConfig> NormalizeConfig(v1::ExpertdConfig config) {
  if (config.model().empty()) return absl::InvalidArgumentError("no --model given");
  if (config.listen().empty()) return absl::InvalidArgumentError("no --listen address given");
  for (const std::string& spec : config.listen()) WARP_RETURN_IF_ERROR(ParseListen(spec).status());
  WARP_RETURN_IF_ERROR(CheckTcpSecurity(config));
  if ((config.num_shards() > 0 || config.shard_index() > 0) &&
      config.shard_index() >= config.num_shards()) {
    return absl::InvalidArgumentError(absl::StrCat("shard ", config.shard_index(), "/",
                                                   config.num_shards(),
                                                   ": expected I/N with 0 <= I < N, e.g. 0/2"));
  }
  if (config.io_threads() == 0) config.set_io_threads(ExpertStore::Options{}.io_threads);
  if (config.io_threads() > kMaxIoThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("io_threads ", config.io_threads(), ": at most ", kMaxIoThreads,
                     " reads in flight (far above any disk's queue)"));
  }
  if (!config.has_engram_cache_bytes()) {
    config.set_engram_cache_bytes(EngramStore::Options{}.cache_bytes);
  }
  const bool has_fastpath = absl::c_any_of(
      config.listen(), [](const std::string& spec) { return absl::StartsWith(spec, "fastpath:"); });
  if (!config.has_staging_slots())
    config.set_staging_slots(has_fastpath ? 2 * config.io_threads() : 0);
  if (config.staging_slots() > kMaxStagingSlots) {
    return absl::InvalidArgumentError(
        absl::StrCat("staging_slots ", config.staging_slots(), ": at most ", kMaxStagingSlots));
  }
  if (config.staging_slots() > 0 && !has_fastpath) {
    return absl::InvalidArgumentError(
        absl::StrCat("staging_slots ", config.staging_slots(),
                     ": only fast-path clients use staging slots, and no fastpath: address "
                     "is listened on (add one, or leave staging_slots unset)"));
  }
  if (config.max_keys_per_request() == 0) config.set_max_keys_per_request(256);
  if (config.compute_threads() == 0) {
    config.set_compute_threads(std::max(1u, std::thread::hardware_concurrency()));
  }
  if (config.max_compute_rows() == 0) config.set_max_compute_rows(256);
  if (config.max_compute_rows() > kMaxComputeRows) {
    return absl::InvalidArgumentError(absl::StrCat("max_compute_rows ", config.max_compute_rows(),
                                                   ": at most ", kMaxComputeRows));
  }
  if (config.socket_mode() == 0) config.set_socket_mode(0660);
  if (config.max_fastpath_connections() == 0) config.set_max_fastpath_connections(256);
  if (config.max_grpc_calls() == 0) config.set_max_grpc_calls(128);
  if (config.max_leases_per_connection() == 0) config.set_max_leases_per_connection(1024);
  if (config.idle_timeout_seconds() == 0) config.set_idle_timeout_seconds(300);
  if (config.stall_timeout_seconds() == 0) config.set_stall_timeout_seconds(10);
  // The store's knobs, each default filled in from ExpertStore::Options.
  WARP_ASSIGN_OR_RETURN(const ExpertStore::Options store, StoreOptionsOf(config));
  SetStoreFields(store, config);
  return config;
}

absl::StatusOr<ExpertStore::Options> StoreOptionsOf(const v1::ExpertdConfig& config) {
  // Shared memory only for fast-path clients, who map it: a daemon serving
  // gRPC alone (across a network, records or Compute) keeps its cache in
  // private memory. Into its memfd a prompt's 780 MiB of misses took 0.92 s
  // here, into private memory 0.14 s (docs/EFFICIENCY.md, "A daemon's cache
  // in private memory").
  const bool has_fastpath = absl::c_any_of(
      config.listen(), [](const std::string& spec) { return absl::StartsWith(spec, "fastpath:"); });
  ExpertStore::Options store{.cache_bytes = config.budget_bytes(),
                             .shared_arena = has_fastpath,
                             .prefault_cache = !config.skip_prefault(),
                             .staging_slots = config.staging_slots(),
                             .foresight = !config.has_foresight() || config.foresight()};
  if (config.io_threads() != 0) store.io_threads = config.io_threads();
  WARP_ASSIGN_OR_RETURN(store.cache_policy, ParseEvictionPolicy(config.cache_policy()));
  BankSet::Options& banks = store.banks;
  banks.verify = !config.no_verify() && !config.skip_crc();
  banks.verify_every_read = config.verify_every_read();
  WARP_ASSIGN_OR_RETURN(banks.io_backend, ParseIoBackend(config.io_engine()));
  if (config.io_depth() != 0) banks.uring.depth = config.io_depth();
  if (config.io_piece_bytes() != 0) banks.uring.piece_bytes = config.io_piece_bytes();
  banks.ordered_pieces = !config.has_ordered_pieces() || config.ordered_pieces();
  return store;
}

void SetStoreFields(const ExpertStore::Options& store, v1::ExpertdConfig& config) {
  config.set_io_threads(store.io_threads);
  config.set_cache_policy(EvictionPolicyName(store.cache_policy));
  config.set_skip_prefault(!store.prefault_cache);
  config.set_foresight(store.foresight);
  const BankSet::Options& banks = store.banks;
  config.set_no_verify(!banks.verify);
  config.set_skip_crc(false);  // its old name: no_verify says it
  config.set_verify_every_read(banks.verify_every_read);
  config.set_io_engine(IoBackendName(banks.io_backend));
  config.set_io_depth(banks.uring.depth);
  config.set_io_piece_bytes(banks.uring.piece_bytes);
  config.set_ordered_pieces(banks.ordered_pieces);
}

void BlockTerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

absl::Status Serve(const v1::ExpertdConfig& config) {
  auto& log = Logger("expertd");
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<Container> opened, Container::Open(config.model()));
  if (config.num_shards() > 0) {
    WARP_RETURN_IF_ERROR(opened->RestrictToShard(config.shard_index(), config.num_shards()));
  }
  std::shared_ptr<const Container> container = std::move(opened);
  const Manifest& manifest = container->manifest();
  uint64_t bank_bytes = 0;
  for (const BankEntry& bank : manifest.banks) {
    bank_bytes += bank.record_bytes * container->HeldExperts(bank).size();
  }
  log.info("model {}: {} banks, {} of records, fingerprint {}{}", config.model(),
           manifest.banks.size(), FormatBytes(bank_bytes), FingerprintHex(manifest.fingerprint),
           container->shard().second > 1
               ? absl::StrCat(", shard ", container->shard().first, "/", container->shard().second)
               : std::string());
  WARP_ASSIGN_OR_RETURN(const ExpertStore::Options options, StoreOptionsOf(config));
  WARP_ASSIGN_OR_RETURN(auto store, ExpertStore::Open(container, options));
  log.info("{}; {} staging slots ({})", store->Settings(), config.staging_slots(),
           FormatBytes(config.staging_slots() * store->slot_bytes()));

  std::unique_ptr<EngramStore> engram;
  if (!manifest.engram.empty()) {
    WARP_ASSIGN_OR_RETURN(
        engram, EngramStore::Open(container, {.cache_bytes = config.engram_cache_bytes(),
                                              .io_threads = options.io_threads,
                                              .verify = options.banks.verify}));
    log.info("{} engram tables; their records' cache {}", manifest.engram.size(),
             FormatBytes(engram->cache_bytes()));
  }

  const uint64_t disk_bytes_per_second = ProbeDisk(*container);
  // One set of request rules for both transports.
  const RequestHandler handler(*store, config.max_keys_per_request(), engram.get(),
                               disk_bytes_per_second);
  ComputeHandler compute(
      *store, {.threads = config.compute_threads(), .max_rows = config.max_compute_rows()});
  ExpertServiceImpl service(handler, compute, std::chrono::seconds(config.stall_timeout_seconds()));
  std::vector<Listener> listeners;
  for (const std::string& spec : config.listen()) listeners.push_back(*ParseListen(spec));
  std::vector<std::unique_ptr<UdsServer>> fastpaths;  // before the gRPC server: it may fail
  for (const Listener& listener : listeners) {
    if (!listener.fastpath) continue;
    WARP_ASSIGN_OR_RETURN(
        auto fastpath,
        UdsServer::Start(handler,
                         {.path = listener.socket_path,
                          .socket_mode = config.socket_mode(),
                          .max_connections = config.max_fastpath_connections(),
                          .connection = {
                              .max_leases = config.max_leases_per_connection(),
                              .stall_timeout = std::chrono::seconds(config.stall_timeout_seconds()),
                              .idle_timeout = std::chrono::seconds(config.idle_timeout_seconds()),
                          }}));
    fastpaths.push_back(std::move(fastpath));
  }
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<grpc::Server> server,
                        StartGrpc(service, config, compute.max_request_bytes(), listeners));
  for (const Listener& listener : listeners) {
    const std::string bound =
        listener.port != 0
            ? absl::StrCat("tcp:", listener.address.substr(0, listener.address.rfind(':')), ":",
                           listener.port)
            : listener.spec;
    log.info("listening on {}{}", bound,
             listener.port == 0               ? ""
             : config.tls_cert().empty()      ? " (plain TCP, --insecure)"
             : config.tls_client_ca().empty() ? " (TLS, token)"
                                              : " (mutual TLS, token)");
    // One stdout line per address, for scripts and tests that bound port 0.
    std::printf("listening %s\n", bound.c_str());
  }
  std::fflush(stdout);

  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int signal = 0;
  sigwait(&set, &signal);
  log.info("signal {}: draining in-flight reads", signal);
  // Each connection answers the request it is serving, then closes; its leases go with it.
  for (std::unique_ptr<UdsServer>& fastpath : fastpaths) fastpath->Shutdown();
  if (server != nullptr) {
    // Not Shutdown(now + 10 s) alone: it waits until every client closes its
    // channel, and an idle channel stays open, so a daemon with one attached
    // always took the whole grace period (3-10 s). The service refuses new
    // calls and waits for those in flight; Shutdown then only lets calls that
    // raced the refusal take it, and closes the connections.
    if (!service.StopAndWaitIdle(absl::Now() + kDrainGrace)) {
      log.warn("gRPC calls still running after {} s: cancelling them",
               absl::ToInt64Seconds(kDrainGrace));
    }
    server->Shutdown(std::chrono::system_clock::now() + kCloseGrace);
    server->Wait();
  }
  for (const Listener& listener : listeners) {
    if (!listener.socket_path.empty()) ::unlink(listener.socket_path.c_str());
  }
  log.info("drained; exiting");
  return absl::OkStatus();
}

}  // namespace warp::expertd
