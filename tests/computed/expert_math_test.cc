// ExpertMath on a record still landing: the rows computed block by block as
// the bytes come are the bits of the whole record's Run, for SwiGLU and
// gpt-oss's clamped SwiGLU, in several formats, with and without 8-bit
// activations, on one thread and two; a read that ends early is refused, not
// computed from bytes that never came.

#include "common/compute/expert_math.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "common/format/bank_format.h"
#include "common/io/aligned_buffer.h"
#include "common/store/landing_record.h"
#include "gtest/gtest.h"
#include "tests/computed/kernel_matrices.h"
#include "tests/testing/status_matchers.h"

namespace warp::computed {
namespace {

using kernels::kernel_test::RandomMatrix;
using kernels::kernel_test::RandomVector;
using kernels::kernel_test::StoredMatrix;

constexpr uint64_t kHidden = 256, kInter = 128;

// A record of gate_proj, up_proj and down_proj (each with its scales after
// its data), the bank that describes it and the bytes.
struct TestRecord {
  BankEntry bank;
  std::vector<std::byte> bytes;
};

// SwiGLU's gate_proj, up_proj, down_proj, or gpt-oss's gate_up_proj and
// down_proj with their f32 biases after each.
TestRecord MakeRecord(TensorFormat format, ExpertActivation activation, std::mt19937_64& rng) {
  TestRecord record;
  record.bank.layer = 1;
  uint64_t at = 0;
  auto add = [&](const char* name, uint64_t rows, uint64_t cols) {
    const StoredMatrix m = RandomMatrix(format, rows, cols, rng);
    TensorEntry entry{.name = name, .format = format, .shape = {rows, cols}};
    entry.data = {.offset = at, .bytes = m.data.size()};
    record.bytes.insert(record.bytes.end(), m.data.begin(), m.data.end());
    at += m.data.size();
    if (!m.scale.empty()) {
      entry.scale = Extent{.offset = at, .bytes = m.scale.size()};
      record.bytes.insert(record.bytes.end(), m.scale.begin(), m.scale.end());
      at += m.scale.size();
    }
    record.bank.matrices.push_back(entry);
  };
  auto add_bias = [&](const char* name, uint64_t n) {
    const std::vector<float> bias = RandomVector(n, rng);
    const auto* bytes = reinterpret_cast<const std::byte*>(bias.data());
    record.bytes.insert(record.bytes.end(), bytes, bytes + n * sizeof(float));
    record.bank.matrices.push_back({.name = name,
                                    .format = TensorFormat::kF32,
                                    .shape = {n},
                                    .data = {.offset = at, .bytes = n * sizeof(float)}});
    at += n * sizeof(float);
  };
  if (activation == ExpertActivation::kSwiGlu) {
    add("gate_proj", kInter, kHidden);
    add("up_proj", kInter, kHidden);
    add("down_proj", kHidden, kInter);
  } else {
    add("gate_up_proj", 2 * kInter, kHidden);
    add_bias("gate_up_proj_bias", 2 * kInter);
    add("down_proj", kHidden, kInter);
    add_bias("down_proj_bias", kHidden);
  }
  record.bank.payload_bytes = at;
  record.bank.record_bytes = RecordBytesFor(at);
  record.bytes.resize(record.bank.record_bytes);
  return record;
}

// Copies `record` into `into` a few KiB at a time on another thread, telling
// `landing` each prefix, and ends the read after `end_at` bytes.
std::thread Feed(const std::vector<std::byte>& record, std::span<std::byte> into,
                 LandingRecord& landing, uint64_t end_at) {
  return std::thread([&record, into, &landing, end_at] {
    constexpr uint64_t kStep = 3 * 4096;
    for (uint64_t at = 0; at < end_at; at += kStep) {
      const uint64_t n = std::min(kStep, end_at - at);
      std::memcpy(into.data() + at, record.data() + at, n);
      landing.Landed(at + n);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    landing.End();
  });
}

class ExpertMathLandingTest
    : public ::testing::TestWithParam<std::tuple<TensorFormat, bool, size_t, ExpertActivation>> {
 protected:
  // The math of `record` under this case's activation, q8 setting and threads.
  std::unique_ptr<ExpertMath> Math(const TestRecord& record) {
    const auto [format, q8, threads, activation] = GetParam();
    pool_ = std::make_unique<ThreadPool>(threads);
    compute_ = std::make_unique<ComputeContext>(*pool_, Arithmetic{.q8_activations = q8});
    const ExpertMathSpec spec{.activation = activation, .swiglu_limit = 7.0f};
    absl::StatusOr<std::unique_ptr<ExpertMath>> math =
        ExpertMath::Create(spec, record.bank, codebooks_, *compute_);
    EXPECT_TRUE(math.ok()) << math.status();
    return math.ok() ? *std::move(math) : nullptr;
  }

  const Codebooks codebooks_{};
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<ComputeContext> compute_;
};

TEST_P(ExpertMathLandingTest, RowsComputedAsTheyLandAreTheWholeRecordsBits) {
  std::mt19937_64 rng(11);
  const TestRecord record = MakeRecord(std::get<0>(GetParam()), std::get<3>(GetParam()), rng);
  std::unique_ptr<ExpertMath> math = Math(record);
  ASSERT_NE(math, nullptr);

  constexpr uint32_t kTokens = 3;
  const std::vector<float> xs = RandomVector(kTokens * kHidden, rng);
  std::vector<float> whole(kTokens * kHidden), landed(kTokens * kHidden, -1.0f);
  math->Run(ExpertRecord{.data = record.bytes, .record_bytes = record.bytes.size()}, xs, kTokens,
            whole);

  AlignedBuffer slot(record.bytes.size());
  LandingRecord landing(slot.span().first(record.bytes.size()));
  std::atomic<int> waits{0};
  std::thread feeder = Feed(record.bytes, slot.span(), landing, record.bytes.size());
  const bool done = math->RunLanding(landing, xs, kTokens, landed, [&](uint64_t bytes) {
    ++waits;
    return landing.WaitFor(bytes);
  });
  feeder.join();
  ASSERT_TRUE(done);
  EXPECT_EQ(std::memcmp(whole.data(), landed.data(), whole.size() * sizeof(float)), 0);
  EXPECT_GE(waits.load(), 3);  // at least a wait a matrix
}

TEST_P(ExpertMathLandingTest, AReadThatEndsEarlyIsRefused) {
  std::mt19937_64 rng(12);
  const TestRecord record = MakeRecord(std::get<0>(GetParam()), std::get<3>(GetParam()), rng);
  std::unique_ptr<ExpertMath> math = Math(record);
  ASSERT_NE(math, nullptr);
  const std::vector<float> xs = RandomVector(kHidden, rng);
  std::vector<float> out(kHidden);
  AlignedBuffer slot(record.bytes.size());
  LandingRecord landing(slot.span().first(record.bytes.size()));
  // The read fails with down_proj half in.
  const TensorEntry& down =
      *std::find_if(record.bank.matrices.begin(), record.bank.matrices.end(),
                    [](const TensorEntry& m) { return m.name == "down_proj"; });
  std::thread feeder =
      Feed(record.bytes, slot.span(), landing, down.data.offset + down.data.bytes / 2);
  const bool done =
      math->RunLanding(landing, xs, 1, out, [&](uint64_t bytes) { return landing.WaitFor(bytes); });
  feeder.join();
  EXPECT_FALSE(done);
}

INSTANTIATE_TEST_SUITE_P(
    Formats, ExpertMathLandingTest,
    ::testing::Combine(
        ::testing::Values(TensorFormat::kF32, TensorFormat::kQ4B32, TensorFormat::kGgmlQ4_0,
                          TensorFormat::kGgmlQ8_0, TensorFormat::kF8E4M3B128,
                          TensorFormat::kF8E4M3B32),
        ::testing::Bool(), ::testing::Values(size_t{1}, size_t{2}),
        ::testing::Values(ExpertActivation::kSwiGlu, ExpertActivation::kClampedSwiGlu)));

TEST(LandingRecordTest, AWaiterIsWokenByEachPrefixAndByTheEnd) {
  AlignedBuffer buffer(8 * 4096);
  LandingRecord landing(buffer.span());
  EXPECT_EQ(landing.WaitFor(0), 0u);
  std::thread reader([&] {
    landing.Landed(4096);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    landing.Landed(3 * 4096);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    landing.End();
  });
  EXPECT_GE(landing.WaitFor(4096), 4096u);
  EXPECT_GE(landing.WaitFor(2 * 4096), 3 * 4096u);
  EXPECT_EQ(landing.WaitFor(8 * 4096), 3 * 4096u);  // the read ended short
  reader.join();
  EXPECT_EQ(landing.WaitFor(1 << 30), 3 * 4096u);  // and stays ended
}

}  // namespace
}  // namespace warp::computed
