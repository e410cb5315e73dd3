// Many clients against one expertd: records/s, bytes/s and errors, and the
// daemon's RSS, descriptors and threads before, under load and after the
// clients leave (a leak shows as "after" above "before"). tests/bench/daemon_load.sh
// runs it over the fast path and gRPC with TLS.
//
//   daemon_load MODEL.warp ADDRESS --pid PID [--clients N] [--seconds S]
//               [--keys-per-read K] [--tls-ca PEM --token-file FILE]

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "common/byte_size.h"
#include "common/format/container.h"
#include "common/memory/heap_reuse.h"
#include "tests/bench/daemon_load.h"

namespace {

void PrintFigures(const char* when, const warp::bench::ProcessFigures& f) {
  std::printf("  daemon %-6s RSS %s, %llu fds, %llu threads\n", when,
              warp::FormatBytes(f.rss_bytes).c_str(), static_cast<unsigned long long>(f.fds),
              static_cast<unsigned long long>(f.threads));
}

}  // namespace

int main(int argc, char** argv) {
  warp::KeepFreedHeapMemory();  // as computed does: common/memory/heap_reuse.h
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: daemon_load MODEL.warp ADDRESS --pid PID [--clients N] [--seconds S] "
                 "[--keys-per-read K] [--tls-ca PEM --token-file FILE]\n");
    return 2;
  }
  warp::bench::LoadOptions options{.address = argv[2]};
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--pid") options.daemon_pid = std::atoi(value.c_str());
    if (flag == "--clients") options.clients = std::strtoull(value.c_str(), nullptr, 10);
    if (flag == "--seconds") {
      options.duration = std::chrono::milliseconds(std::atoll(value.c_str()) * 1000);
    }
    if (flag == "--keys-per-read")
      options.keys_per_read = std::strtoull(value.c_str(), nullptr, 10);
    if (flag == "--tls-ca") options.tls.ca = value;
    if (flag == "--token-file") options.tls.token_file = value;
  }
  auto container = warp::Container::Open(argv[1]);
  if (!container.ok()) {
    std::fprintf(stderr, "daemon_load: %s\n", std::string(container.status().message()).c_str());
    return 1;
  }
  for (const warp::BankEntry& bank : (*container)->manifest().banks) {
    for (uint32_t expert : (*container)->HeldExperts(bank)) {
      options.keys.push_back({bank.layer, expert});
    }
  }
  const warp::bench::ProcessFigures before = warp::bench::ReadProcessFigures(options.daemon_pid);
  const warp::bench::LoadResult result = warp::bench::RunLoad(options);
  std::this_thread::sleep_for(std::chrono::seconds(1));  // the daemon notices the closes
  const warp::bench::ProcessFigures after = warp::bench::ReadProcessFigures(options.daemon_pid);
  std::printf(
      "%s, %zu clients (%zu connected), %zu key(s) a read, %.1f s: %.0f records/s, %s/s, "
      "%llu errors%s%s\n",
      options.address.c_str(), options.clients, result.connected, options.keys_per_read,
      result.seconds, static_cast<double>(result.records) / result.seconds,
      warp::FormatBytes(static_cast<uint64_t>(static_cast<double>(result.bytes) / result.seconds))
          .c_str(),
      static_cast<unsigned long long>(result.errors), result.errors ? ", first: " : "",
      result.first_error.c_str());
  PrintFigures("before", before);
  PrintFigures("loaded", result.peak);
  PrintFigures("after", after);
  return result.errors == 0 && result.connected == options.clients ? 0 : 1;
}
