// expertd serve --model MODEL.warp [--shard I/N] --listen unix:PATH --listen tcp:HOST:PORT
//   [--listen fastpath:PATH]
//   [--budget SIZE] [--io-threads N] [--no-verify] [--cache-policy lfru|lru|arc|duel]
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
#include "expertd/serve.h"

namespace warp::expertd {
namespace {

struct ServeFlags {
  std::string config_path;
  std::string model;
  std::vector<std::string> listen;
  std::string budget;
  uint32_t io_threads = 0;
  std::optional<uint32_t> staging_slots;
  bool no_verify = false;
  bool verify_every_read = false;
  bool no_prefault = false;
  uint32_t max_keys = 0;
  std::string cache_policy;
  std::string io_engine;
  std::string shard;  // "I/N"
  std::string tls_cert, tls_key, tls_client_ca, token_file;
  bool insecure = false;
};

absl::Status Run(const ServeFlags& flags) {
  v1::ExpertdConfig config;
  if (!flags.config_path.empty()) {
    auto loaded = LoadConfig(flags.config_path);
    if (!loaded.ok()) return loaded.status();
    config = *loaded;
  }
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
  if (flags.io_threads) config.set_io_threads(flags.io_threads);
  if (flags.staging_slots) config.set_staging_slots(*flags.staging_slots);
  if (flags.no_verify) config.set_skip_crc(true);
  if (flags.verify_every_read) config.set_verify_every_read(true);
  if (flags.no_prefault) config.set_skip_prefault(true);
  if (flags.max_keys) config.set_max_keys_per_request(flags.max_keys);
  if (!flags.cache_policy.empty()) config.set_cache_policy(flags.cache_policy);
  if (!flags.io_engine.empty()) config.set_io_engine(flags.io_engine);
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
  cmd->add_option("--config", flags->config_path, "ExpertdConfig textproto; flags override it");
  cmd->add_option("--model", flags->model, "Container (or shard) directory");
  cmd->add_option(
      "--listen", flags->listen,
      "unix:PATH, tcp:HOST:PORT (port 0: any) or fastpath:PATH (zero-copy, same machine); repeat");
  cmd->add_option("--budget", flags->budget, "Record cache size, e.g. 8G (default 0: no cache)");
  cmd->add_option("--io-threads", flags->io_threads, "Reads in flight (default 4)");
  cmd->add_option("--staging-slots", flags->staging_slots,
                  "Shared slots uncached records are leased from on the fast path (default 2 x "
                  "--io-threads; 0: copies through the socket)");
  cmd->add_flag("--no-verify", flags->no_verify,
                "Skip the CRC32C of records read (footers are still checked)");
  cmd->add_flag("--verify-every-read", flags->verify_every_read,
                "Check a record's CRC32C at every read (default: until it first passes)");
  cmd->add_flag("--no-prefault", flags->no_prefault,
                "Fault the cache's memory in at first use instead of ahead of it, at idle priority");
  cmd->add_option("--max-keys", flags->max_keys, "Keys per Read request (default 256)");
  cmd->add_option("--io-engine", flags->io_engine,
                  "How records come off the disk: uring (default: pieces in flight) or pread");
  cmd->add_option("--cache-policy", flags->cache_policy,
                  "Eviction order of the record cache: duel (default), lfru, lru or arc");
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
  return [cmd, flags]() {
    if (!cmd->parsed()) return -1;
    const absl::Status status = Run(*flags);
    if (status.ok()) return 0;
    std::fprintf(stderr, "expertd serve: %s\n", std::string(status.message()).c_str());
    return 1;
  };
}

}  // namespace warp::expertd
