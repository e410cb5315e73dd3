// Random whole-record reads through each ExpertSource path, for
// docs/EFFICIENCY.md; tests/bench/run_all.sh runs it next to fio randread on
// the same bank with the same block size and queue depth.
//
//   store_bench MODEL.warp [--qd N] [--seconds S] [--store ADDRESS ...]
//               [--io-engine pread|uring] [--io-threads N] [--io-depth N] [--io-piece BYTES]
//               [--miss-only] [--no-hits] [--no-verify] [--miss-cache BYTES]
//               [--no-ordered-pieces]
// ADDRESS: unix:PATH or tcp:HOST:PORT (gRPC), fastpath:PATH (zero-copy).
// --qd records are asked for at once; the embedded store reads them with
// --io-threads threads (default: qd), each through the --io-engine.
// Paths: "embedded miss" (in-process store, no cache), "embedded hit" (cache
// holding every record read), and one line per --store address (a daemon
// started with --budget 0 measures misses; a warm cache measures hits).

#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/client/grpc_source.h"
#include "common/client/uds_source.h"
#include "common/format/container.h"
#include "common/memory/heap_reuse.h"
#include "common/store/expert_store.h"

namespace {

using warp::ExpertKey;

struct Args {
  std::string model;
  size_t qd = 4;
  double seconds = 5;
  std::vector<std::string> stores;
  warp::IoBackend io_backend = warp::IoBackend::kPread;
  uint32_t io_threads = 0;  // 0: qd
  warp::UringReader::Options uring;
  bool miss_only = false;
  bool hits = true;  // --no-hits: no embedded hit row, no hit row per fastpath: store
  bool verify = true;
  bool ordered_pieces = true;  // --no-ordered-pieces: each uring read its own --io-depth
  uint64_t miss_cache = 0;  // --miss-cache: the miss row's cache (misses land in its slots)
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
  double first_ms = 0;  // mean time from asking for qd records to the first one landing
};

// Reads random keys, qd at a time, for `seconds`.
Rate Measure(warp::ExpertSource& source, const std::vector<ExpertKey>& keys, size_t qd,
             double seconds, uint64_t* errors) {
  std::mt19937_64 rng(42);
  std::uniform_int_distribution<size_t> pick(0, keys.size() - 1);
  uint64_t bytes = 0;
  uint64_t records = 0;
  uint64_t batches = 0;
  double first_ms = 0;
  const auto start = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    std::vector<ExpertKey> batch;
    for (size_t i = 0; i < qd; ++i) batch.push_back(keys[pick(rng)]);
    const auto asked = std::chrono::steady_clock::now();
    std::shared_ptr<warp::ReadBatch> reads = source.Read(batch, warp::Priority::kDemand);
    for (size_t i = 0; i < qd; ++i) {
      std::optional<std::pair<size_t, absl::StatusOr<warp::ExpertRecord>>> next = reads->Next();
      if (i == 0) {
        first_ms +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - asked)
                .count();
      }
      if (next && next->second.ok()) {
        bytes += next->second->record_bytes;
        ++records;
      } else {
        ++*errors;
      }
    }
    ++batches;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  return Rate{static_cast<double>(bytes) / elapsed / 1e9, records / elapsed,
              first_ms / static_cast<double>(batches)};
}

// A hit hands out a lease on cached bytes without copying them: its GB/s is
// records/s x record size, not a memory bandwidth.
void Report(const std::string& path, Rate rate, uint64_t errors) {
  std::printf("%-44s %9.2f GB/s %11.0f records/s %8.2f ms to the first%s\n", path.c_str(),
              rate.gb_per_sec, rate.records_per_sec, rate.first_ms,
              errors ? (" (" + std::to_string(errors) + " errors)").c_str() : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  warp::KeepFreedHeapMemory();  // before any thread allocates: common/memory/heap_reuse.h
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--qd" && i + 1 < argc) {
      args.qd = std::stoul(argv[++i]);
    } else if (arg == "--seconds" && i + 1 < argc) {
      args.seconds = std::stod(argv[++i]);
    } else if (arg == "--store" && i + 1 < argc) {
      args.stores.push_back(argv[++i]);
    } else if (arg == "--io-engine" && i + 1 < argc) {
      absl::StatusOr<warp::IoBackend> backend = warp::ParseIoBackend(argv[++i]);
      if (!backend.ok()) {
        std::fprintf(stderr, "%s\n", std::string(backend.status().message()).c_str());
        return 1;
      }
      args.io_backend = *backend;
    } else if (arg == "--io-threads" && i + 1 < argc) {
      args.io_threads = std::stoul(argv[++i]);
    } else if (arg == "--io-depth" && i + 1 < argc) {
      args.uring.depth = std::stoul(argv[++i]);
    } else if (arg == "--io-piece" && i + 1 < argc) {
      args.uring.piece_bytes = std::stoull(argv[++i]);
    } else if (arg == "--miss-cache" && i + 1 < argc) {
      args.miss_cache = std::stoull(argv[++i]);
    } else if (arg == "--no-ordered-pieces") {
      args.ordered_pieces = false;
    } else if (arg == "--no-verify") {
      args.verify = false;
    } else if (arg == "--miss-only") {
      args.miss_only = true;
    } else if (arg == "--no-hits") {
      args.hits = false;
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
  const uint32_t io_threads = args.io_threads ? args.io_threads : static_cast<uint32_t>(args.qd);
  {
    auto store = warp::ExpertStore::Open(
        shared,
        {.cache_bytes = args.miss_cache,
         .io_threads = io_threads,
         .shared_arena = false,  // as computed's embedded stores: private, on huge pages
         .banks = {.verify = args.verify,
                   .io_backend = args.io_backend,
                   .uring = args.uring,
                   .ordered_pieces = args.ordered_pieces}});
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", std::string(store.status().message()).c_str());
      return 1;
    }
    uint64_t errors = 0;
    std::string path = absl::StrCat("embedded miss, ", warp::IoBackendName((*store)->io_backend()),
                                    " x", io_threads);
    if ((*store)->io_backend() == warp::IoBackend::kUring) {
      absl::StrAppend(&path, " (", args.uring.depth, " x ",
                      warp::FormatBytes(args.uring.piece_bytes),
                      args.ordered_pieces ? " a store, in order)" : " a read)");
    }
    Report(path, Measure(**store, keys, args.qd, args.seconds, &errors), errors);
    if (std::getenv("WARP_BENCH_COUNTERS")) {
      for (const auto& [name, value] : (*store)->Counters())
        std::printf("  %s %lu\n", name.c_str(), value);
    }
  }
  if (args.miss_only) return 0;
  if (args.hits) {
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
    if (args.hits && address.rfind("fastpath:", 0) == 0) {
      // The same daemon's cache, warm: hits handed out in place.
      const std::vector<ExpertKey> hot(keys.begin(),
                                       keys.begin() + std::min<size_t>(4, keys.size()));
      Measure(**client, hot, args.qd, 0.2, &errors);
      Report(address + " hit", Measure(**client, hot, args.qd, args.seconds, &errors), errors);
    }
  }
  return 0;
}
