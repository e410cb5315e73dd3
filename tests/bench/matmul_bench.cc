// Throughput of MatMulRows on a k2-slice expert matrix (2048 x 7168, the shape of
// gate_proj / up_proj) for each weight format, 1 and 8 tokens and every ISA this
// CPU supports, as GB/s of weight bytes (data + scales) read per call, next to
// the memory read bound measured in the same run.
//
// Part 1 is one thread: the kernel is per-thread work. Part 2 splits the rows
// over all cores, as the engine does, for 1 token with the best ISA, against
// the read bound of all cores.
//
// Every call reads its weights from DRAM: the matrix is cycled through copies
// totalling at least size_mib (default 512), more than the last-level cache.
//
// 4-bit formats also run MatMulRowsQ8 (q8_activations.h: the activations rounded
// to 8 bits, integer dots), its quantization of the activations counted in.
//
// Usage: matmul_bench [size_mib [format]]   (format: only that one, e.g. ggml_q4_0)

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/matmul.h"
#include "common/kernels/q8_activations.h"
#include "tests/computed/kernel_matrices.h"

namespace warp::kernels {
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

// Runs fn(k) for k in [0, num_threads) on that many threads; returns seconds.
double TimeOnThreads(unsigned num_threads, const std::function<void(unsigned)>& fn) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned k = 1; k < num_threads; ++k) threads.emplace_back(fn, k);
  fn(0);
  for (std::thread& t : threads) t.join();
  return Seconds(start);
}

// The read bound: the buffer summed as uint64, (a) as in crc32c_bench, one
// stream with four scalar accumulators, and (b) the way the kernels read: four
// streams a quarter apart, 32-byte loads, a software prefetch 2 KiB ahead. On
// the dev VM (b) reads 15 GB/s where (a) reads 11-13, so (a) alone is not a
// bound: bf16 and f32 beat it. The bound is the better of the two.
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

__attribute__((target("avx2"))) uint64_t SumFourStreamsAvx2(std::span<const uint64_t> words) {
  const size_t quarter = words.size() / 4 / 8 * 8;
  __m256i sum0 = _mm256_setzero_si256(), sum1 = sum0;
  for (size_t i = 0; i < quarter; i += 8) {
    for (size_t s = 0; s < 4; ++s) {
      const uint64_t* p = words.data() + s * quarter + i;
      _mm_prefetch(reinterpret_cast<const char*>(p + 256), _MM_HINT_T0);
      sum0 = _mm256_add_epi64(sum0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
      sum1 = _mm256_add_epi64(sum1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 4)));
    }
  }
  uint64_t lanes[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(sum0, sum1));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

// GB/s of the best round; each of `num_threads` threads sums its own slice.
double MeasureReadBound(std::span<const uint64_t> words, unsigned num_threads, uint64_t& sink) {
  using SumFn = uint64_t (*)(std::span<const uint64_t>);
  std::vector<SumFn> sums = {SumOneStream};
  if (IsaSupported(Isa::kAvx2)) sums.push_back(SumFourStreamsAvx2);
  std::vector<uint64_t> sinks(num_threads);
  double best = std::numeric_limits<double>::infinity();
  for (int round = 0; round < kRounds; ++round) {
    for (SumFn sum : sums) {
      best = std::min(best, TimeOnThreads(num_threads, [&](unsigned k) {
                        const size_t slice = words.size() / num_threads;
                        sinks[k] += sum(words.subspan(k * slice, slice));
                      }));
    }
  }
  for (uint64_t s : sinks) sink += s;
  return words.size_bytes() / best / 1e9;
}

// Copies of one matrix with realistic magnitudes (no NaN, no subnormals):
// f32/bf16 values in +-[1, 2), any q4/q8/mxfp4 code, f16 scales in [2^-8, 2^-7),
// E4M3 codes but NaN with f32 scales in [2^-8, 2^-7),
// E8M0 scales 2^-7 .. 2^-4, in their own sub-tensor or inside ggml blocks.
class Weights {
 public:
  Weights(TensorFormat format, size_t min_total_bytes)
      : format_(format),
        data_bytes_(DataBytes(format, {kRows, kCols})),
        scale_bytes_(ScaleBytes(format, {kRows, kCols})),
        copies_(std::max<size_t>(2, (min_total_bytes + CopyBytes() - 1) / CopyBytes())),
        bytes_(copies_ * CopyBytes()) {
    uint64_t state = 42;
    for (float& c : codebook_.centroids) {  // centroids in [-1, 1)
      c = static_cast<float>(SplitMix(state) >> 40) * 0x1p-23f - 1.0f;
    }
    codebook_.ComputeSums();
    for (size_t copy = 0; copy < copies_; ++copy) {
      std::byte* base = bytes_.data() + copy * CopyBytes();
      Fill({base, data_bytes_}, /*is_scale=*/false, state);
      Fill({base + data_bytes_, scale_bytes_}, /*is_scale=*/true, state);
      SetGgmlBlockScales({base, data_bytes_}, state);
    }
  }

  uint64_t CopyBytes() const { return data_bytes_ + scale_bytes_; }
  size_t copies() const { return copies_; }
  MatrixView View(size_t copy) const {
    const std::byte* base = bytes_.data() + copy * CopyBytes();
    return {.format = format_,
            .rows = kRows,
            .cols = kCols,
            .data = base,
            .scale = scale_bytes_ != 0 ? base + data_bytes_ : nullptr,
            .codebook = NeedsCodebook(format_) ? &codebook_ : nullptr};
  }

 private:
  void Fill(std::span<std::byte> out, bool is_scale, uint64_t& state) const {
    for (size_t i = 0; i + 8 <= out.size(); i += 8) {
      uint64_t word = SplitMix(state);
      if (is_scale && format_ == TensorFormat::kMxfp4B32) {  // eight E8M0 scales
        word = (word & 0x0303030303030303u) | 0x7878787878787878u;
      } else if (is_scale && IsTiledFp8(format_)) {  // two f32 scales in [2^-8, 2^-7)
        word = (word & 0x007fffff007fffffu) | 0x3b8000003b800000u;
      } else if (IsTiledFp8(format_)) {  // eight E4M3 codes, bit 3 clear: no NaN (0x7f)
        word &= 0xf7f7f7f7f7f7f7f7u;
      } else if (is_scale) {  // four f16 scales
        word = (word & 0x03ff03ff03ff03ffu) | 0x1c001c001c001c00u;
      } else if (format_ == TensorFormat::kF32) {  // two floats
        word = (word & 0x807fffff807fffffu) | 0x3f8000003f800000u;
      } else if (format_ == TensorFormat::kBF16) {  // four bf16
        word = (word & 0x807f807f807f807fu) | 0x3f803f803f803f80u;
      }
      std::memcpy(out.data() + i, &word, sizeof(word));
    }
  }

  // The ggml formats keep their scales inside each block, which Fill left
  // random: any f16 (NaN, 65504) or E8M0 (2^-127, whose products are float
  // subnormals, each a microcode assist). Sets them as Fill sets the others.
  void SetGgmlBlockScales(std::span<std::byte> data, uint64_t& state) const {
    const std::optional<GgmlBlockLayout> layout = GgmlBlockLayoutOf(format_);
    if (!layout) return;
    if (format_ == TensorFormat::kGgmlMxfp4) {
      for (size_t b = 0; b < data.size(); b += layout->bytes) {
        data[b] = static_cast<std::byte>((SplitMix(state) & 3) | 0x78);
      }
      return;
    }
    const std::vector<uint64_t> halves = kernel_test::GgmlHalfOffsets(format_);
    for (size_t b = 0; b < data.size(); b += layout->bytes) {
      for (uint64_t at : halves) {
        const auto half = static_cast<uint16_t>((SplitMix(state) & 0x03ff) | 0x1c00);
        std::memcpy(data.data() + b + at, &half, sizeof(half));
      }
    }
  }

  TensorFormat format_;
  Vq3rCodebook codebook_;  // vq3r_b32 only
  uint64_t data_bytes_, scale_bytes_;
  size_t copies_;
  std::vector<std::byte> bytes_;  // copies_ x (data | scale)
};

// A kernel of MatMulRowsQ8 (the activations rounded to 8 bits), beside MatMulRows.
using Q8Kernel = void (*)(const MatrixView&, const Q8Activations&, size_t, size_t, float*, size_t);

struct Contender {
  size_t tokens;
  Isa isa;
  unsigned num_threads = 1;  // rows split evenly across them
  Q8Kernel q8 = nullptr;     // set: this MatMulRowsQ8 kernel, named q8_name
  const char* q8_name = "";
  size_t calls_per_round = 0;
  double best_seconds_per_call = std::numeric_limits<double>::infinity();
};

// Microseconds QuantizeActivations takes for `tokens` tokens of kCols: of inputs
// that differ from the last call (`fresh`), or of the same bytes again (the
// call returns after comparing them).
double QuantizeMicros(TensorFormat format, const std::vector<float>& x, size_t tokens, bool fresh) {
  std::vector<float> other(x.begin(), x.begin() + tokens * kCols);
  other[0] = -other[0] - 1.0f;  // differs from x in one value
  Q8Activations quantized;
  QuantizeActivations(format, x.data(), tokens, kCols, &quantized);
  constexpr int kRepeats = 64;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kRepeats; ++i) {
    const float* input = fresh && i % 2 == 0 ? other.data() : x.data();
    QuantizeActivations(format, input, tokens, kCols, &quantized);
  }
  return Seconds(start) / kRepeats * 1e6;
}

// `calls` calls, each on the next copy, rows split across the contender's threads.
// A q8 contender's calls each quantize fresh activations once, as the engine's
// Linear does before it splits the rows: that time is measured on its own and
// added to each call.
double TimeCalls(const Weights& weights, const Contender& c, const std::vector<float>& x,
                 std::vector<float>& y, size_t calls, size_t& copy) {
  const size_t first = copy;
  copy = (copy + calls) % weights.copies();
  Q8Activations quantized;
  double quantize_seconds = 0;
  if (c.q8 != nullptr) {
    const TensorFormat format = weights.View(0).format;
    quantize_seconds =
        QuantizeMicros(format, x, c.tokens, /*fresh=*/true) * 1e-6 * static_cast<double>(calls);
    QuantizeActivations(format, x.data(), c.tokens, kCols, &quantized);
  }
  return quantize_seconds + TimeOnThreads(c.num_threads, [&](unsigned k) {
           const size_t begin = kRows * k / c.num_threads, end = kRows * (k + 1) / c.num_threads;
           for (size_t call = 0; call < calls; ++call) {
             const MatrixView w = weights.View((first + call) % weights.copies());
             if (c.q8 != nullptr) {
               c.q8(w, quantized, begin, end, y.data(), kRows);
             } else {
               MatMulRows(w, x, c.tokens, begin, end, y, kRows);
             }
           }
         });
}

// Times every contender once per round, rounds interleaved so that frequency
// and neighbour noise on a shared host hit all of them alike; keeps the best
// mean time of a call.
void RunRounds(const Weights& weights, const std::vector<float>& x, std::vector<float>& y,
               std::vector<Contender>& contenders) {
  size_t copy = 0;
  for (Contender& c : contenders) {  // the scalar reference is slow: cap its calls
    SetIsaForTesting(c.isa);
    const double one = TimeCalls(weights, c, x, y, 1, copy);
    c.calls_per_round =
        c.isa != Isa::kScalar
            ? weights.copies()
            : std::clamp<size_t>(static_cast<size_t>(kScalarSecondsPerContender / kRounds / one), 1,
                                 weights.copies());
  }
  for (int round = 0; round < kRounds; ++round) {
    for (Contender& c : contenders) {
      SetIsaForTesting(c.isa);
      const double seconds = TimeCalls(weights, c, x, y, c.calls_per_round, copy);
      c.best_seconds_per_call = std::min(c.best_seconds_per_call, seconds / c.calls_per_round);
    }
  }
}

void PrintRow(TensorFormat format, const Contender& c, uint64_t bytes, double bound_gbps) {
  const double gbps = bytes / c.best_seconds_per_call / 1e9;
  const double gflops = 2.0 * kRows * kCols * c.tokens / c.best_seconds_per_call / 1e9;
  std::printf("%-9s %6zu %-7s %7u %10.1f %8.2f %7.0f%% %8.1f\n",
              std::string(TensorFormatName(format)).c_str(), c.tokens,
              c.q8 != nullptr ? c.q8_name : std::string(IsaName(c.isa)).c_str(), c.num_threads,
              c.best_seconds_per_call * 1e6, gbps, 100.0 * gbps / bound_gbps, gflops);
}

// The read bounds on 1 thread and on all cores, each the best of kRounds
// rounds; Run() measures them before and after the kernels and keeps the best,
// so that a neighbour busy for a moment on the shared host does not lower them.
struct Bounds {
  double one_thread = 0, all_cores = 0;
};

Bounds MeasureBounds(unsigned cores, uint64_t& sink) {
  std::vector<uint64_t> words((kBoundMib << 20) / sizeof(uint64_t));
  uint64_t state = 1;
  for (uint64_t& w : words) w = SplitMix(state);  // also faults the pages in
  return {MeasureReadBound(words, 1, sink), MeasureReadBound(words, cores, sink)};
}

int Run(size_t size_mib, std::string_view only) {
  uint64_t sink = 0;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const Bounds before = MeasureBounds(cores, sink);
  std::vector<std::pair<TensorFormat, std::vector<Contender>>> results;

  std::vector<float> x(8 * kCols);
  uint64_t state = 7;
  for (float& v : x) v = static_cast<float>(SplitMix(state) >> 40) * 0x1p-23f - 1.0f;
  std::vector<float> y(8 * kRows);

  const Isa saved = ActiveIsa();
  for (TensorFormat format :
       {TensorFormat::kMxfp4B32, TensorFormat::kQ4B32, TensorFormat::kQ8B32, TensorFormat::kBF16,
        TensorFormat::kF32, TensorFormat::kGgmlQ4_K, TensorFormat::kGgmlQ6_K,
        TensorFormat::kGgmlQ5_K, TensorFormat::kGgmlQ5_0, TensorFormat::kGgmlQ5_1,
        TensorFormat::kGgmlQ4_1, TensorFormat::kGgmlQ3_K, TensorFormat::kGgmlQ2_K,
        TensorFormat::kGgmlQ4_0, TensorFormat::kGgmlQ8_0, TensorFormat::kGgmlMxfp4,
        TensorFormat::kVq3rB32, TensorFormat::kF8E4M3B128, TensorFormat::kF8E4M3B32}) {
    if (!only.empty() && only != TensorFormatName(format)) continue;
    const Weights weights(format, size_mib << 20);
    std::vector<Contender> contenders;
    for (size_t tokens : {size_t{1}, size_t{8}}) {
      for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
        if (IsaSupported(isa)) contenders.push_back({.tokens = tokens, .isa = isa});
      }
    }
    if (cores > 1) contenders.push_back({.tokens = 1, .isa = DetectIsa(), .num_threads = cores});
    if (HasQ8Path(format)) {
      std::vector<std::pair<Q8Kernel, const char*>> q8;
      if (IsaSupported(Isa::kAvx2)) q8.emplace_back(internal::MatMulRowsQ8Avx2, "q8-avx2");
      if (internal::CpuHasAvx512Vnni()) {
        q8.emplace_back(internal::MatMulRowsQ8Avx512Vnni, "q8-vnni");
      }
      for (size_t tokens : {size_t{1}, size_t{2}, size_t{4}, size_t{8}}) {
        for (const auto& [kernel, name] : q8) {
          contenders.push_back(
              {.tokens = tokens, .isa = DetectIsa(), .q8 = kernel, .q8_name = name});
        }
      }
      if (cores > 1 && !q8.empty()) {
        contenders.push_back({.tokens = 1,
                              .isa = DetectIsa(),
                              .num_threads = cores,
                              .q8 = q8.back().first,
                              .q8_name = q8.back().second});
      }
    }
    RunRounds(weights, x, y, contenders);
    results.emplace_back(format, std::move(contenders));
    for (float v : y) sink += static_cast<uint64_t>(v != 0);
  }
  if (results.empty()) {
    std::fprintf(stderr, "matmul_bench: no format is named '%s'\n", std::string(only).c_str());
    return 2;
  }
  const Bounds after = MeasureBounds(cores, sink);
  const double bound_1 = std::max(before.one_thread, after.one_thread);
  const double bound_all = std::max(before.all_cores, after.all_cores);

  std::printf("matrix [%llu, %llu], weights cycled through >= %zu MiB of copies, best of %d\n",
              static_cast<unsigned long long>(kRows), static_cast<unsigned long long>(kCols),
              size_mib, kRounds);
  std::printf("memory read bound (sum u64 over %zu MiB): %.2f GB/s on 1 thread, %.2f GB/s on %u\n",
              kBoundMib, bound_1, bound_all, cores);
  std::printf("\n%-9s %6s %-7s %7s %10s %8s %8s %8s\n", "format", "tokens", "isa", "threads",
              "us/call", "GB/s", "of bound", "GFLOP/s");
  for (const auto& [format, contenders] : results) {
    const uint64_t bytes = DataBytes(format, {kRows, kCols}) + ScaleBytes(format, {kRows, kCols});
    for (const Contender& c : contenders) {
      PrintRow(format, c, bytes, c.num_threads == 1 ? bound_1 : bound_all);
    }
  }
  SetIsaForTesting(saved);
  for (TensorFormat format : {TensorFormat::kQ4B32, TensorFormat::kGgmlQ4_0}) {
    if (!only.empty() && only != TensorFormatName(format)) continue;
    std::printf(
        "%s activations quantized (q8 rows): 1 token %.1f us, 8 tokens %.1f us; the same "
        "bytes again %.1f us\n",
        std::string(TensorFormatName(format)).c_str(), QuantizeMicros(format, x, 1, /*fresh=*/true),
        QuantizeMicros(format, x, 8, /*fresh=*/true),
        QuantizeMicros(format, x, 1, /*fresh=*/false));
  }
  std::printf(
      "(\"of bound\": of the 1-thread bound, or of the %u-thread one on %u threads; "
      "sink %llu)\n",
      cores, cores, static_cast<unsigned long long>(sink));
  return 0;
}

}  // namespace
}  // namespace warp::kernels

int main(int argc, char** argv) {
  size_t size_mib = warp::kernels::kDefaultMib;
  if (argc > 3) {
    std::fprintf(stderr, "usage: %s [size_mib [format]]\n", argv[0]);
    return 2;
  }
  if (argc >= 2) {
    char* end = nullptr;
    const unsigned long long parsed = std::strtoull(argv[1], &end, 10);
    if (end == argv[1] || *end != '\0' || parsed == 0) {
      std::fprintf(stderr, "matmul_bench: size_mib must be a positive integer, got '%s'\n",
                   argv[1]);
      return 2;
    }
    size_mib = static_cast<size_t>(parsed);
  }
  return warp::kernels::Run(size_mib, argc == 3 ? argv[2] : "");
}
