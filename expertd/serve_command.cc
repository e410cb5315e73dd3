// expertd serve --model MODEL.warp [--shard I/N] --listen unix:PATH --listen tcp:HOST:PORT
//   [--listen fastpath:PATH]
//   [--budget SIZE] [--staging-slots N] [store flags: --io-threads N, --cache-policy P, ...]
//   [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM] --token-file FILE | --insecure]
//   [--config FILE.textproto]

#include "expertd/serve_command.h"

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/byte_size.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/store/store_flags.h"
#include "expertd/serve.h"

namespace warp::expertd {
namespace {

struct ServeFlags {
  std::string config_path;
  // The config file, read as --config is parsed (before the flags that
  // override it), and its store knobs, which the store's flags then override.
  v1::ExpertdConfig config;
  absl::Status config_status;
  ExpertStore::Options store;
  std::string model;
  std::vector<std::string> listen;
  std::string budget;
  std::string engram_cache;
  std::optional<uint32_t> staging_slots;
  uint32_t max_keys = 0;
  uint32_t compute_threads = 0;
  uint32_t max_compute_rows = 0;
  std::string shard;  // "I/N"
  std::string tls_cert, tls_key, tls_client_ca, token_file;
  bool insecure = false;
};

// --config FILE: the file's fields under the flags.
void LoadConfigFile(const std::string& path, ServeFlags& flags) {
  flags.config_path = path;
  absl::StatusOr<v1::ExpertdConfig> loaded = LoadConfig(path);
  if (!loaded.ok()) {
    flags.config_status = loaded.status();
    return;
  }
  flags.config = *std::move(loaded);
  absl::StatusOr<ExpertStore::Options> store = StoreOptionsOf(flags.config);
  if (!store.ok()) {
    flags.config_status = Annotate(store.status(), path);
    return;
  }
  flags.store = *std::move(store);
}

absl::Status Run(const ServeFlags& flags) {
  WARP_RETURN_IF_ERROR(flags.config_status);
  v1::ExpertdConfig config = flags.config;
  SetStoreFields(flags.store, config);
  if (!flags.model.empty()) config.set_model(flags.model);
  if (!flags.listen.empty()) {
    config.clear_listen();
    for (const std::string& spec : flags.listen) config.add_listen(spec);
  }
  if (!flags.budget.empty()) {
    auto budget = ParseByteSize(flags.budget);
    if (!budget.ok()) return budget.status();
    config.set_budget_bytes(*budget);
  }
  if (!flags.engram_cache.empty()) {
    auto bytes = ParseByteSize(flags.engram_cache);
    if (!bytes.ok()) return bytes.status();
    config.set_engram_cache_bytes(*bytes);
  }
  if (flags.staging_slots) config.set_staging_slots(*flags.staging_slots);
  if (flags.max_keys) config.set_max_keys_per_request(flags.max_keys);
  if (flags.compute_threads) config.set_compute_threads(flags.compute_threads);
  if (flags.max_compute_rows) config.set_max_compute_rows(flags.max_compute_rows);
  if (!flags.tls_cert.empty()) config.set_tls_cert(flags.tls_cert);
  if (!flags.tls_key.empty()) config.set_tls_key(flags.tls_key);
  if (!flags.tls_client_ca.empty()) config.set_tls_client_ca(flags.tls_client_ca);
  if (!flags.token_file.empty()) config.set_token_file(flags.token_file);
  if (flags.insecure) config.set_insecure(true);
  if (!flags.shard.empty()) {
    std::vector<std::string> parts = absl::StrSplit(flags.shard, '/');
    uint32_t index = 0, count = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &index) ||
        !absl::SimpleAtoi(parts[1], &count) || count == 0 || index >= count) {
      return absl::InvalidArgumentError(
          absl::StrCat("--shard ", flags.shard, ": expected I/N with 0 <= I < N, e.g. 0/2"));
    }
    config.set_shard_index(index);
    config.set_num_shards(count);
  }
  auto normalized = NormalizeConfig(config);
  if (!normalized.ok()) return normalized.status();
  if (!normalized->log_level().empty()) InitLogging(normalized->log_level());
  return Serve(*normalized);
}

}  // namespace

std::function<int()> AddServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve a container's expert records");
  // First: CLI11 runs the callbacks of the options in the order they were
  // added, so the file is read before the flags that override it.
  cmd->add_option_function<std::string>(
      "--config", [flags](const std::string& path) { LoadConfigFile(path, *flags); },
      "ExpertdConfig textproto; flags override it");
  cmd->add_option("--model", flags->model, "Container (or shard) directory");
  cmd->add_option(
      "--listen", flags->listen,
      "unix:PATH, tcp:HOST:PORT (port 0: any) or fastpath:PATH (zero-copy, same machine); repeat");
  cmd->add_option("--budget", flags->budget, "Record cache size, e.g. 8G (default 0: no cache)");
  cmd->add_option("--engram-cache", flags->engram_cache,
                  "Cache of the engram tables' records (DeepSeek V4.1), apart from --budget, "
                  "e.g. 1G (default 256M; 0: none)");
  cmd->add_option("--staging-slots", flags->staging_slots,
                  "Shared slots uncached records are leased from on the fast path (default 2 x "
                  "--io-threads; 0: copies through the socket)");
  cmd->add_option("--max-keys", flags->max_keys, "Keys per Read request (default 256)");
  cmd->add_option("--compute-threads", flags->compute_threads,
                  "Threads of the Compute RPC, which runs experts for clients across a network "
                  "(default: the machine's hardware threads)");
  cmd->add_option("--max-compute-rows", flags->max_compute_rows,
                  "Rows one Compute request may carry (default 256, at most 4096)");
  cmd->add_option("--tls-cert", flags->tls_cert,
                  "PEM certificate chain of the tcp: listeners (TLS; with --tls-key)");
  cmd->add_option("--tls-key", flags->tls_key, "PEM private key of --tls-cert");
  cmd->add_option("--tls-client-ca", flags->tls_client_ca,
                  "PEM CA: tcp: clients must present a certificate it signed (mutual TLS)");
  cmd->add_option("--token-file", flags->token_file,
                  "Tokens a tcp: client must send, one per line (any of them is accepted)");
  cmd->add_flag("--insecure", flags->insecure,
                "Plain TCP without TLS or token: loopback addresses only (tests, benchmarks)");
  cmd->add_option("--shard", flags->shard,
                  "I/N: serve only experts e with e % N == I of an unsharded model");
  // The daemon's defaults are an empty config's.
  flags->store = *StoreOptionsOf(v1::ExpertdConfig());
  AddStoreFlags(cmd, flags->store, StoreFlagsFor::kDaemon);
  return [cmd, flags]() {
    if (!cmd->parsed()) return -1;
    const absl::Status status = Run(*flags);
    if (status.ok()) return 0;
    std::fprintf(stderr, "expertd serve: %s\n", std::string(status.message()).c_str());
    return 1;
  };
}

}  // namespace warp::expertd
