// Throughput of both CRC32C paths against the memory-read bound, measured the
// same way: one thread, one pass over a buffer larger than the LLC, best of
// kRepetitions.
//
// Usage: crc32c_bench [size_mib]   (default 256)

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <span>
#include <vector>

#include "common/crc32c.h"

namespace warp {
namespace {

constexpr int kRounds = 5;
constexpr size_t kDefaultMib = 256;

// The read bound: the buffer summed as uint64, as one sequential stream and as
// three interleaved streams 8 KiB apart (the access pattern of ExtendSse42).
// On the dev VM the three-stream read is ~10% faster than one stream (12.7 vs
// 11.7 GB/s at 256 MiB), so the bound is the better of the two. Four
// accumulators in the one-stream loop: a single add chain under-read (10.5 GB/s).
uint64_t SumWords(std::span<const uint64_t> words) {
  uint64_t sum0 = 0, sum1 = 0, sum2 = 0, sum3 = 0;
  size_t i = 0;
  for (; i + 4 <= words.size(); i += 4) {
    sum0 += words[i];
    sum1 += words[i + 1];
    sum2 += words[i + 2];
    sum3 += words[i + 3];
  }
  for (; i < words.size(); ++i) sum0 += words[i];
  return sum0 + sum1 + sum2 + sum3;
}

uint64_t SumWords3Streams(std::span<const uint64_t> words) {
  constexpr size_t kBlockWords = 8192 / sizeof(uint64_t);
  uint64_t sum0 = 0, sum1 = 0, sum2 = 0;
  size_t group = 0;
  for (; group + 3 * kBlockWords <= words.size(); group += 3 * kBlockWords) {
    for (size_t i = group; i < group + kBlockWords; ++i) {
      sum0 += words[i];
      sum1 += words[i + kBlockWords];
      sum2 += words[i + 2 * kBlockWords];
    }
  }
  for (; group < words.size(); ++group) sum0 += words[group];
  return sum0 + sum1 + sum2;
}

// One timed pass: `fn` returns a value that is folded into a sink so the work
// cannot be elided.
struct Contender {
  const char* name;
  std::function<uint64_t()> fn;
  double best_ns = std::numeric_limits<double>::infinity();
};

// Times every contender once per round, rounds interleaved so that frequency
// and neighbour noise on a shared host hit all of them alike; keeps the best.
uint64_t RunRounds(std::vector<Contender>& contenders) {
  uint64_t sink = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (Contender& c : contenders) {
      const auto start = std::chrono::steady_clock::now();
      sink += c.fn();
      const auto stop = std::chrono::steady_clock::now();
      c.best_ns =
          std::min(c.best_ns, std::chrono::duration<double, std::nano>(stop - start).count());
    }
  }
  return sink;
}

int Run(size_t size_mib) {
  const size_t bytes = size_mib << 20;
  std::vector<uint64_t> words(bytes / sizeof(uint64_t));
  std::mt19937_64 rng(42);
  for (uint64_t& w : words) w = rng();  // Also faults every page in before timing.
  const auto* data = reinterpret_cast<const std::byte*>(words.data());

  std::vector<Contender> contenders;
  contenders.push_back({"memory read (sum u64, 1 stream)", [&] { return SumWords(words); }});
  contenders.push_back(
      {"memory read (sum u64, 3 streams)", [&] { return SumWords3Streams(words); }});
  contenders.push_back(
      {"crc32c portable", [&] { return crc32c_internal::ExtendPortable(0, data, bytes); }});
  const bool has_sse42 = crc32c_internal::HasSse42();
  if (has_sse42) {
    contenders.push_back(
        {"crc32c sse4.2", [&] { return crc32c_internal::ExtendSse42(0, data, bytes); }});
  }
  const uint64_t sink = RunRounds(contenders);

  std::printf("buffer: %zu MiB, best of %d interleaved rounds\n", size_mib, kRounds);
  const double bound_ns = std::min(contenders[0].best_ns, contenders[1].best_ns);
  const double bound_gbps = bytes / bound_ns;
  for (const Contender& c : contenders) {
    const double gbps = bytes / c.best_ns;
    std::printf("%s: %.2f GB/s (%.0f%% of read bound)\n", c.name, gbps, 100.0 * gbps / bound_gbps);
  }
  if (!has_sse42) std::printf("crc32c sse4.2: unavailable on this CPU\n");
  if (has_sse42 && crc32c_internal::ExtendSse42(0, data, bytes) !=
                       crc32c_internal::ExtendPortable(0, data, bytes)) {
    std::fprintf(stderr, "crc32c_bench: sse4.2 and portable results differ\n");
    return 1;
  }
  std::printf("(sink %016llx)\n", static_cast<unsigned long long>(sink));
  return 0;
}

}  // namespace
}  // namespace warp

int main(int argc, char** argv) {
  size_t size_mib = warp::kDefaultMib;
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [size_mib]\n", argv[0]);
    return 2;
  }
  if (argc == 2) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || parsed == 0) {
      std::fprintf(stderr, "crc32c_bench: size_mib must be a positive integer, got '%s'\n",
                   argv[1]);
      return 2;
    }
    size_mib = static_cast<size_t>(parsed);
  }
  return warp::Run(size_mib);
}
