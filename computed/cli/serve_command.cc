// computed serve MODEL.warp [--listen HOST:PORT] [--ssl-cert-file PEM --ssl-key-file PEM]
//                [--api-key KEY | --api-key-file FILE | --no-api-key]
//                [--parallel N] [--context N] [--max-queue N] [template options]
//                [engine options]
// An OpenAI-compatible HTTP server (computed/serve/http_server.h) with a chat
// page at /. Prints "listening HOST:PORT" once it accepts connections;
// SIGINT or SIGTERM stops it (running requests end, queued ones get 503).

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/wire/lan_auth.h"
#include "computed/cli/commands.h"
#include "computed/cli/prompt_cache_flags.h"
#include "computed/cli/session_flags.h"
#include "computed/cli/template_flags.h"
#include "computed/engine/transformer.h"
#include "computed/run/model_text.h"
#include "computed/serve/engine_worker.h"
#include "computed/serve/http_server.h"

namespace warp::computed {
namespace {

struct ServeFlags {
  SessionFlags session;
  std::string listen = "127.0.0.1:8080";
  std::string api_key;
  bool api_key_given = false;  // --api-key, even as ''
  std::string api_key_file;
  bool no_api_key = false;
  uint32_t max_connections_per_client = 64;
  double head_timeout_seconds = 10;
  std::string tls_cert, tls_key;
  std::string model_name;
  uint32_t context = 0;  // 0: the model's trained context, at most kDefaultContext
  uint32_t max_queue = 64;
  uint32_t parallel = 4;  // requests decoded together, each with a KV cache of `context`
  double keepalive_seconds = 5;
  TemplateFlags template_flags;
  PromptCacheFlags prompt_cache;
};

// KV positions when --context is not given, as `chat`.
constexpr uint32_t kDefaultContext = 4096;

// "HOST:PORT", "[V6]:PORT" or ":PORT" (loopback).
absl::Status ParseListen(const std::string& listen, std::string* host, int* port) {
  const size_t colon = listen.rfind(':');
  uint32_t value = 0;
  if (colon == std::string::npos || !absl::SimpleAtoi(listen.substr(colon + 1), &value) ||
      value > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--listen ", listen, ": expected HOST:PORT (port 0-65535; 0: any free)"));
  }
  absl::string_view name = absl::string_view(listen).substr(0, colon);
  if (absl::ConsumePrefix(&name, "[")) {
    if (!absl::ConsumeSuffix(&name, "]")) {
      return absl::InvalidArgumentError(absl::StrCat("--listen ", listen, ": unclosed '['"));
    }
  }
  *host = name.empty() ? "127.0.0.1" : std::string(name);
  *port = static_cast<int>(value);
  return absl::OkStatus();
}

// Shorter keys are refused: a server answers guesses as fast as they come.
constexpr size_t kMinApiKeyLength = 8;

// The key, read and checked; empty only with --no-api-key or on loopback
// without a key.
absl::StatusOr<std::string> ApiKey(const ServeFlags& flags, const std::string& host) {
  std::string key = flags.api_key;
  std::string source = "--api-key";
  if (!flags.api_key_file.empty()) {
    source = absl::StrCat("--api-key-file ", flags.api_key_file);
    std::error_code error;
    if (std::filesystem::is_directory(flags.api_key_file, error)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": is a directory, not a key file"));
    }
    std::ifstream in(flags.api_key_file);
    if (!in) return absl::NotFoundError(absl::StrCat(source, ": cannot be read"));
    std::stringstream text;
    text << in.rdbuf();
    key = std::string(absl::StripAsciiWhitespace(text.str()));
    if (key.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": is empty"));
  } else if (flags.api_key_given && key.empty()) {
    return absl::InvalidArgumentError(
        "--api-key '': an empty key would turn authentication off; give a key, or "
        "--no-api-key to serve without one");
  }
  if (!key.empty() && key.size() < kMinApiKeyLength) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the key has ", key.size(),
                                                   " characters; at least ", kMinApiKeyLength,
                                                   " are required"));
  }
  if (key.empty() && !flags.no_api_key && !IsLoopbackHost(host)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen ", flags.listen,
        ": serving beyond loopback needs --api-key or --api-key-file (or --no-api-key, "
        "to let anyone who reaches the port use it)"));
  }
  return key;
}

absl::Status Run(const ServeFlags& flags) {
  // Before any thread starts, so that every thread inherits the mask and the
  // signal reaches the sigwait below.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  serve::ServerOptions options;
  serve::FrontOptions& front = options.front;
  if (absl::Status s = ParseListen(flags.listen, &front.host, &front.port); !s.ok()) return s;
  absl::StatusOr<std::string> key = ApiKey(flags, front.host);
  if (!key.ok()) return key.status();
  options.api_key = *key;
  if (flags.max_connections_per_client < 1) {
    return absl::InvalidArgumentError("--max-connections-per-client must be at least 1");
  }
  front.max_connections_per_client = flags.max_connections_per_client;
  front.max_connections = std::max<size_t>(front.max_connections, flags.max_connections_per_client);
  if (!(flags.head_timeout_seconds >= 0.1 && flags.head_timeout_seconds <= 3600)) {
    return absl::InvalidArgumentError("--head-timeout-seconds must be in [0.1, 3600]");
  }
  front.head_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(flags.head_timeout_seconds * 1000));
  if (flags.tls_cert.empty() != flags.tls_key.empty()) {
    return absl::InvalidArgumentError("--ssl-cert-file and --ssl-key-file go together");
  }
  front.tls_cert = flags.tls_cert;
  front.tls_key = flags.tls_key;
  front.body_read_timeout = front.head_timeout;
  if (!(flags.keepalive_seconds >= 0.1 && flags.keepalive_seconds <= 3600)) {
    return absl::InvalidArgumentError("--keepalive-seconds must be in [0.1, 3600]");
  }
  options.keepalive =
      std::chrono::milliseconds(static_cast<int64_t>(flags.keepalive_seconds * 1000));
  if (flags.max_queue < 1 || flags.max_queue > 4096) {
    return absl::InvalidArgumentError("--max-queue must be in [1, 4096]");
  }
  options.connection_threads = flags.max_queue + 4;  // each waiting request holds one

  auto text = LoadModelText(flags.session.options.model);
  if (!text.ok()) return text.status();
  auto template_context = ApplyTemplateFlags(flags.template_flags, *text);
  if (!template_context.ok()) return template_context.status();
  options.template_context = *std::move(template_context);
  options.model_name = flags.model_name.empty()
                           ? std::filesystem::path(flags.session.options.model).filename().string()
                           : flags.model_name;
  uint32_t context = flags.context;
  if (context == 0) {
    context =
        text->max_positions ? std::min(text->max_positions, kDefaultContext) : kDefaultContext;
  }
  if (flags.parallel < 1 || flags.parallel > kMaxSequences) {
    return absl::InvalidArgumentError(
        absl::StrCat("--parallel must be in [1, ", kMaxSequences, "]: requests decoded together"));
  }
  auto session_options = ResolveSessionOptions(flags.session, context);
  if (!session_options.ok()) return session_options.status();
  session_options->engine.sequences = flags.parallel;
  auto session = Session::Open(*session_options);
  if (!session.ok()) return session.status();

  auto disk_cache = OpenPromptCache(flags.prompt_cache, **session);
  if (!disk_cache.ok()) return disk_cache.status();
  serve::EngineWorker engine(*std::move(session), flags.max_queue, disk_cache->get());
  serve::HttpServer server(engine, *text, options);
  absl::StatusOr<int> port = server.Bind();
  if (!port.ok()) return port.status();
  absl::Status served;
  std::thread http([&] { served = server.Serve(); });
  Logger("serve").info("serving {} on {}://{}:{} ({} requests at once, context {} positions{})",
                       options.model_name, front.tls_cert.empty() ? "http" : "https", front.host,
                       *port, flags.parallel, context,
                       options.api_key.empty() ? ", no API key" : ", API key required");
  // One stdout line, for scripts and tests that bound port 0.
  std::printf("listening %s:%d\n", front.host.c_str(), *port);
  std::fflush(stdout);

  int signal = 0;
  sigwait(&signals, &signal);
  Logger("serve").info("signal {}: stopping", signal);
  // The engine first: a streamed reply's connection waits for its request,
  // and httplib's Stop waits for the connections.
  engine.Shutdown();
  server.Stop();
  http.join();
  absl::Status finished = engine.Finish();
  if (!served.ok()) return served;
  return finished;
}

}  // namespace

CommandRunner AddServeCommand(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "An OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, ...) "
      "with a chat page at /");
  AddSessionFlags(cmd, flags->session);
  AddPromptCacheFlags(cmd, flags->prompt_cache);
  AddTemplateFlags(cmd, flags->template_flags);
  cmd->add_option("--listen", flags->listen, "HOST:PORT to listen on (port 0: any free one)")
      ->capture_default_str();
  CLI::Option* api_key =
      cmd->add_option("--api-key", flags->api_key,
                      "Require 'Authorization: Bearer KEY' on /v1/* and /metrics (at least 8 "
                      "characters)");
  CLI::Option* api_key_file =
      cmd->add_option("--api-key-file", flags->api_key_file,
                      "The same, the key read from a file (not visible in ps)")
          ->excludes(api_key);
  cmd->add_flag("--no-api-key", flags->no_api_key,
                "Serve without a key beyond loopback (anyone who reaches the port may use it)")
      ->excludes(api_key)
      ->excludes(api_key_file);
  cmd->add_option("--max-connections-per-client", flags->max_connections_per_client,
                  "Connections one address may hold; more get 503")
      ->capture_default_str();
  // llama-server's names: --tls-cert/--tls-key are the certificate computed
  // shows expertd daemons (session_flags.cc).
  cmd->add_option("--ssl-cert-file", flags->tls_cert,
                  "Serve HTTPS: the PEM certificate chain (with --ssl-key-file)");
  cmd->add_option("--ssl-key-file", flags->tls_key, "The PEM private key of --ssl-cert-file");
  cmd->add_option("--head-timeout-seconds", flags->head_timeout_seconds,
                  "Seconds a client has to send a request's head (from its first byte), and "
                  "between reads of its body; slower clients get 408")
      ->capture_default_str();
  cmd->add_option("--model-name", flags->model_name,
                  "The model id /v1/models lists (default: the container's directory name)");
  cmd->add_option("--context", flags->context,
                  "KV cache positions for prompt and reply (default: the model's "
                  "max_position_embeddings, at most 4096)");
  cmd->add_option("--parallel", flags->parallel,
                  "Requests decoded together, in one batched pass a token (each has a KV cache "
                  "of --context positions, counted in the budget; more wait in the queue)")
      ->capture_default_str();
  cmd->add_option("--max-queue", flags->max_queue,
                  "Requests that may wait for the engine; more get 503")
      ->capture_default_str();
  cmd->add_option("--keepalive-seconds", flags->keepalive_seconds,
                  "Seconds between keep-alives while a response waits")
      ->capture_default_str();
  return MakeRunner(cmd, [flags, api_key] {
    flags->api_key_given = api_key->count() > 0;
    return Run(*flags);
  });
}

}  // namespace warp::computed
