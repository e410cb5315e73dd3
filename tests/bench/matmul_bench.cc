// Throughput of MatMulRows on a k2-slice expert matrix (2048 x 7168, the shape of
// gate_proj / up_proj) for each weight format, 1 and 8 tokens and every ISA this
// CPU supports, as GB/s of weight bytes (data + scales) read per call, next to
// the memory read bound measured in the same run. One thread: the kernel is
// per-thread work; the engine splits rows across threads.
//
// Every call reads its weights from DRAM: the matrix is cycled through copies
// totalling at least size_mib (default 512), more than the last-level cache.
//
// Usage: matmul_bench [size_mib]

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/numeric/half.h"
#include "computed/kernels/matmul.h"

namespace warp::computed::kernels {
namespace {

constexpr uint64_t kRows = 2048, kCols = 7168;
constexpr int kRounds = 5;
constexpr size_t kDefaultMib = 512;
constexpr size_t kBoundMib = 256;
constexpr double kScalarSecondsPerContender = 2.0;  // the reference is slow; cap its calls

uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The read bound, as in crc32c_bench: the buffer summed as uint64 with four
// accumulators, as one stream and as four streams a quarter of the buffer apart
// (a 4-row tile of the kernel reads four rows at once); the better of the two.
uint64_t SumOneStream(std::span<const uint64_t> words) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i + 4 <= words.size(); i += 4) {
    s0 += words[i];
    s1 += words[i + 1];
    s2 += words[i + 2];
    s3 += words[i + 3];
  }
  return s0 + s1 + s2 + s3;
}

uint64_t SumFourStreams(std::span<const uint64_t> words) {
  const size_t quarter = words.size() / 4;
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < quarter; ++i) {
    s0 += words[i];
    s1 += words[i + quarter];
    s2 += words[i + 2 * quarter];
    s3 += words[i + 3 * quarter];
  }
  return s0 + s1 + s2 + s3;
}

double MeasureReadBound(uint64_t& sink) {
  std::vector<uint64_t> words((kBoundMib << 20) / sizeof(uint64_t));
  uint64_t state = 1;
  for (uint64_t& w : words) w = SplitMix(state);
  double best = std::numeric_limits<double>::infinity();
  for (int round = 0; round < kRounds; ++round) {
    for (auto* sum : {SumOneStream, SumFourStreams}) {
      const auto start = std::chrono::steady_clock::now();
      sink += sum(words);
      best = std::min(best, Seconds(start));
    }
  }
  return (kBoundMib << 20) / best / 1e9;
}

// Weights with realistic magnitudes (no NaN, no subnormals): f32/bf16 values in
// +-[1, 2), any q4/q8 code, f16 scales near 2^-7.
struct Weights {
  TensorFormat format;
  uint64_t data_bytes, scale_bytes;
  std::vector<std::byte> bytes;  // copies x (data | scale)
  size_t copies;

  Weights(TensorFormat f, size_t min_total_bytes)
      : format(f),
        data_bytes(DataBytes(f, {kRows, kCols})),
        scale_bytes(ScaleBytes(f, {kRows, kCols})) {
    copies = std::max<size_t>(2, (min_total_bytes + CopyBytes() - 1) / CopyBytes());
    bytes.resize(copies * CopyBytes());
    uint64_t state = 42;
    for (size_t copy = 0; copy < copies; ++copy) {
      Fill({bytes.data() + copy * CopyBytes(), data_bytes}, state, /*is_scale=*/false);
      Fill({bytes.data() + copy * CopyBytes() + data_bytes, scale_bytes}, state, true);
    }
  }
  uint64_t CopyBytes() const { return data_bytes + scale_bytes; }
  MatrixView View(size_t copy) const {
    const std::byte* base = bytes.data() + copy * CopyBytes();
    return {.format = format,
            .rows = kRows,
            .cols = kCols,
            .data = base,
            .scale = scale_bytes ? base + data_bytes : nullptr};
  }

 private:
  void Fill(std::span<std::byte> out, uint64_t& state, bool is_scale) const {
    for (size_t i = 0; i + 8 <= out.size(); i += 8) {
      uint64_t word = SplitMix(state);
      if (is_scale) {  // four f16 scales in [2^-8, 2^-7)
        word = (word & 0x03ff03ff03ff03ffu) | 0x1c001c001c001c00u;
      } else if (format == TensorFormat::kF32) {  // two floats in +-[1, 2)
        word = (word & 0x807fffff807fffffu) | 0x3f8000003f800000u;
      } else if (format == TensorFormat::kBF16) {  // four bf16 in +-[1, 2)
        word = (word & 0x807f807f807f807fu) | 0x3f803f803f803f80u;
      }
      std::memcpy(out.data() + i, &word, 8);
    }
  }
};

struct Contender {
  size_t tokens;
  Isa isa;
  size_t calls_per_round = 0;
  double best_seconds_per_call = std::numeric_limits<double>::infinity();
};

// Times every contender once per round, rounds interleaved so that frequency
// and neighbour noise on a shared host hit all of them alike; keeps the best
// mean time of a call, each call on the next copy of the weights.
void RunRounds(const Weights& weights, const std::vector<float>& x, std::vector<float>& y,
               std::vector<Contender>& contenders) {
  for (Contender& c : contenders) {  // the scalar reference is slow: cap its calls
    SetIsaForTesting(c.isa);
    const auto start = std::chrono::steady_clock::now();
    MatMulRows(weights.View(0), x, c.tokens, 0, kRows, y, kRows);
    const double one = Seconds(start);
    c.calls_per_round = c.isa != Isa::kScalar
                            ? weights.copies
                            : std::clamp<size_t>(
                                  static_cast<size_t>(kScalarSecondsPerContender / kRounds / one),
                                  1, weights.copies);
  }
  size_t copy = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (Contender& c : contenders) {
      SetIsaForTesting(c.isa);
      const auto start = std::chrono::steady_clock::now();
      for (size_t call = 0; call < c.calls_per_round; ++call) {
        MatMulRows(weights.View(copy), x, c.tokens, 0, kRows, y, kRows);
        copy = (copy + 1) % weights.copies;
      }
      c.best_seconds_per_call =
          std::min(c.best_seconds_per_call, Seconds(start) / c.calls_per_round);
    }
  }
}

int Run(size_t size_mib) {
  uint64_t sink = 0;
  const double bound_gbps = MeasureReadBound(sink);
  std::printf("matrix [%llu, %llu], weights cycled through >= %zu MiB of copies, best of %d\n",
              static_cast<unsigned long long>(kRows), static_cast<unsigned long long>(kCols),
              size_mib, kRounds);
  std::printf("memory read bound (sum u64 over %zu MiB, 1 or 4 streams): %.2f GB/s\n\n",
              kBoundMib, bound_gbps);
  std::printf("%-8s %6s %-7s %10s %9s %8s %9s\n", "format", "tokens", "isa", "us/call",
              "GB/s", "of bound", "GFLOP/s");

  std::vector<float> x(8 * kCols);
  uint64_t state = 7;
  for (float& v : x) v = static_cast<float>(SplitMix(state) >> 40) * 0x1p-23f - 1.0f;
  std::vector<float> y(8 * kRows);

  const Isa saved = ActiveIsa();
  for (TensorFormat format :
       {TensorFormat::kQ4B32, TensorFormat::kQ8B32, TensorFormat::kBF16, TensorFormat::kF32}) {
    const Weights weights(format, size_mib << 20);
    std::vector<Contender> contenders;
    for (size_t tokens : {size_t{1}, size_t{8}}) {
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
        if (IsaSupported(isa)) contenders.push_back({.tokens = tokens, .isa = isa});
      }
    }
    RunRounds(weights, x, y, contenders);
    for (const Contender& c : contenders) {
      const double gbps = weights.CopyBytes() / c.best_seconds_per_call / 1e9;
      const double gflops = 2.0 * kRows * kCols * c.tokens / c.best_seconds_per_call / 1e9;
      std::printf("%-8s %6zu %-7s %10.1f %9.2f %7.0f%% %9.1f\n",
                  std::string(TensorFormatName(format)).c_str(), c.tokens,
                  std::string(IsaName(c.isa)).c_str(), c.best_seconds_per_call * 1e6, gbps,
                  100.0 * gbps / bound_gbps, gflops);
    }
    for (float v : y) sink += static_cast<uint64_t>(v != 0);
  }
  SetIsaForTesting(saved);
  std::printf("(sink %llu)\n", static_cast<unsigned long long>(sink));
  return 0;
}

}  // namespace
}  // namespace warp::computed::kernels

int main(int argc, char** argv) {
  size_t size_mib = warp::computed::kernels::kDefaultMib;
  if (argc > 2) {
    std::fprintf(stderr, "usage: %s [size_mib]\n", argv[0]);
    return 2;
  }
  if (argc == 2) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || parsed == 0) {
      std::fprintf(stderr, "matmul_bench: size_mib must be a positive integer, got '%s'\n",
                   argv[1]);
      return 2;
    }
    size_mib = static_cast<size_t>(parsed);
  }
  return warp::computed::kernels::Run(size_mib);
}
