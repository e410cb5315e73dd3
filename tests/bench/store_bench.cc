// Random whole-record reads through each ExpertSource path, for
// docs/EFFICIENCY.md; tests/bench/run_all.sh runs it next to fio randread on
// the same bank with the same block size and queue depth.
//
//   store_bench MODEL.warp [--qd N] [--seconds S] [--store ADDRESS ...]
// ADDRESS: unix:PATH or tcp:HOST:PORT (gRPC), fastpath:PATH (zero-copy).
// Paths: "embedded miss" (in-process store, no cache), "embedded hit" (cache
// holding every record read), and one line per --store address (a daemon
// started with --budget 0 measures misses; a warm cache measures hits).

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/byte_size.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"
#include "common/format/container.h"
#include "common/store/expert_store.h"

namespace {

using warp::ExpertKey;

struct Args {
  std::string model;
  size_t qd = 4;
  double seconds = 5;
  std::vector<std::string> stores;
};

std::vector<ExpertKey> AllKeys(const warp::Container& container) {
  std::vector<ExpertKey> keys;
  for (const warp::BankEntry& bank : container.manifest().banks) {
    for (uint32_t expert : container.HeldExperts(bank)) keys.push_back({bank.layer, expert});
  }
  return keys;
}

struct Rate {
  double gb_per_sec = 0;
  double records_per_sec = 0;
};

// Reads random keys, qd at a time, for `seconds`.
Rate Measure(warp::ExpertSource& source, const std::vector<ExpertKey>& keys, size_t qd,
             double seconds, uint64_t* errors) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<size_t> pick(0, keys.size() - 1);
  uint64_t bytes = 0;
  uint64_t records = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    std::vector<ExpertKey> batch;
    for (size_t i = 0; i < qd; ++i) batch.push_back(keys[pick(rng)]);
    for (auto& record : source.ReadAll(batch)) {
      if (record.ok()) {
        bytes += record->record_bytes;
        ++records;
      } else {
        ++*errors;
      }
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return Rate{static_cast<double>(bytes) / elapsed / 1e9, records / elapsed};
}

// A hit hands out a lease on cached bytes without copying them: its GB/s is
// records/s x record size, not a memory bandwidth.
void Report(const std::string& path, Rate rate, uint64_t errors) {
  std::printf("%-34s %9.2f GB/s %11.0f records/s%s\n", path.c_str(), rate.gb_per_sec,
              rate.records_per_sec,
              errors ? (" (" + std::to_string(errors) + " errors)").c_str() : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--qd" && i + 1 < argc) {
      args.qd = std::stoul(argv[++i]);
    } else if (arg == "--seconds" && i + 1 < argc) {
      args.seconds = std::stod(argv[++i]);
    } else if (arg == "--store" && i + 1 < argc) {
      args.stores.push_back(argv[++i]);
    } else {
      args.model = arg;
    }
  }
  auto container = warp::Container::Open(args.model);
  if (!container.ok()) {
    std::fprintf(stderr, "%s\n", std::string(container.status().message()).c_str());
    return 1;
  }
  std::shared_ptr<const warp::Container> shared = std::move(*container);
  const std::vector<ExpertKey> keys = AllKeys(*shared);
  const uint64_t record_bytes = shared->manifest().banks.at(0).record_bytes;
  std::printf("records: %zu of %s, queue depth %zu, %.0f s a path\n", keys.size(),
              warp::FormatBytes(record_bytes).c_str(), args.qd, args.seconds);
  {
    auto store = warp::ExpertStore::Open(
        shared, {.cache_bytes = 0, .io_threads = static_cast<uint32_t>(args.qd)});
    uint64_t errors = 0;
    Report("embedded miss", Measure(**store, keys, args.qd, args.seconds, &errors), errors);
  }
  {
    // A cache that holds a few records, read over and over: the hit path.
    const std::vector<ExpertKey> hot(keys.begin(), keys.begin() + std::min<size_t>(4, keys.size()));
    auto store = warp::ExpertStore::Open(
        shared, {.cache_bytes = record_bytes * 8, .io_threads = static_cast<uint32_t>(args.qd)});
    uint64_t errors = 0;
    Measure(**store, hot, args.qd, 0.2, &errors);  // warm
    Report("embedded hit", Measure(**store, hot, args.qd, args.seconds, &errors), errors);
  }
  for (const std::string& address : args.stores) {
    absl::StatusOr<std::unique_ptr<warp::ExpertSource>> client;
    if (address.rfind("fastpath:", 0) == 0) {
      client = warp::UdsExpertSource::Connect({.address = address});
    } else {
      client = warp::GrpcExpertSource::Connect({.address = address});
    }
    if (!client.ok()) {
      std::fprintf(stderr, "%s\n", std::string(client.status().message()).c_str());
      return 1;
    }
    uint64_t errors = 0;
    Report(address, Measure(**client, keys, args.qd, args.seconds, &errors), errors);
    if (address.rfind("fastpath:", 0) == 0) {
      // The same daemon's cache, warm: hits handed out in place.
      const std::vector<ExpertKey> hot(keys.begin(),
                                       keys.begin() + std::min<size_t>(4, keys.size()));
      Measure(**client, hot, args.qd, 0.2, &errors);
      Report(address + " hit", Measure(**client, hot, args.qd, args.seconds, &errors), errors);
    }
  }
  return 0;
}
