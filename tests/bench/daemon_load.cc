#include "tests/bench/daemon_load.h"

#include <dirent.h>

#include <atomic>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"

namespace warp::bench {
namespace {

absl::StatusOr<std::unique_ptr<ExpertSource>> ConnectClient(const LoadOptions& options) {
  if (absl::StartsWith(options.address, "fastpath:")) {
    auto client = UdsExpertSource::Connect({.address = options.address});
    if (!client.ok()) return client.status();
    return std::unique_ptr<ExpertSource>(std::move(*client));
  }
  auto client = GrpcExpertSource::Connect({.address = options.address, .tls = options.tls});
  if (!client.ok()) return client.status();
  return std::unique_ptr<ExpertSource>(std::move(*client));
}

uint64_t StatusField(const std::string& text, const std::string& name) {
  const size_t at = text.find("\n" + name + ":");
  if (at == std::string::npos) return 0;
  std::istringstream value(text.substr(at + name.size() + 2));
  uint64_t n = 0;
  value >> n;
  return n;
}

}  // namespace

ProcessFigures ReadProcessFigures(pid_t pid) {
  ProcessFigures figures;
  std::ifstream file(absl::StrCat("/proc/", pid, "/status"));
  const std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  figures.rss_bytes = StatusField(text, "VmRSS") * 1024;  // kB
  figures.threads = StatusField(text, "Threads");
  if (DIR* dir = ::opendir(absl::StrCat("/proc/", pid, "/fd").c_str())) {
    while (const dirent* entry = ::readdir(dir)) figures.fds += entry->d_name[0] != '.';
    ::closedir(dir);
  }
  return figures;
}

LoadResult RunLoad(const LoadOptions& options) {
  LoadResult result;
  absl::Mutex mu;
  std::atomic<size_t> connected{0};
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::thread> clients;
  for (size_t c = 0; c < options.clients; ++c) {
    clients.emplace_back([&, c] {
      absl::StatusOr<std::unique_ptr<ExpertSource>> source = ConnectClient(options);
      uint64_t records = 0, bytes = 0, errors = 0;
      std::string first_error;
      if (!source.ok()) {
        errors = 1;
        first_error = source.status().ToString();
      } else {
        ++connected;
        while (!go.load()) std::this_thread::yield();
        std::mt19937_64 random(c);
        std::vector<ExpertKey> keys(options.keys_per_read);
        while (!stop.load()) {
          for (ExpertKey& key : keys) key = options.keys[random() % options.keys.size()];
          for (absl::StatusOr<ExpertRecord>& record : (*source)->ReadAll(keys)) {
            if (record.ok()) {
              ++records;
              bytes += record->bytes().size();
            } else if (errors++ == 0) {
              first_error = record.status().ToString();
            }
          }
        }
      }
      absl::MutexLock lock(&mu);
      result.records += records;
      result.bytes += bytes;
      result.errors += errors;
      if (result.first_error.empty()) result.first_error = first_error;
    });
  }
  // Every client connected (or failed) before the clock starts.
  const auto connect_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (connected.load() < options.clients &&
         std::chrono::steady_clock::now() < connect_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    absl::MutexLock lock(&mu);
    if (connected.load() + result.errors >= options.clients) break;
  }
  result.connected = connected.load();
  const auto start = std::chrono::steady_clock::now();
  go.store(true);
  std::this_thread::sleep_for(options.duration / 2);
  if (options.daemon_pid > 0) result.peak = ReadProcessFigures(options.daemon_pid);
  std::this_thread::sleep_for(options.duration - options.duration / 2);
  stop.store(true);
  for (std::thread& client : clients) client.join();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace warp::bench
