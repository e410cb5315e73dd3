// q8/q4/vq3r expert formats against the native conversion of the same checkpoint:
// measured (KL divergence of the next-token distributions, top-1 agreement),
// printed for docs/EFFICIENCY.md, and asserted against the measured figures
// (kMeasured) with a small margin.

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string_view>

#include "common/compute/compute_context.h"
#include "common/format/container.h"
#include "common/store/expert_store.h"
#include "computed/convert/converter.h"
#include "computed/engine/transformer.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

std::vector<float> RunPrompt(const fs::path& model, const std::vector<int32_t>& tokens,
                             bool q8_activations = false) {
  auto container = Container::Open(model);
  EXPECT_TRUE(container.ok()) << container.status();
  std::shared_ptr<const Container> shared = std::move(*container);
  auto store = ExpertStore::Open(shared, {});
  EXPECT_TRUE(store.ok()) << store.status();
  ExpertSource& source = **store;
  ThreadPool pool(2);
  ComputeContext compute(pool, Arithmetic{.q8_activations = q8_activations});
  auto transformer = Transformer::Create(shared, source, compute, {.max_positions = 64});
  EXPECT_TRUE(transformer.ok()) << transformer.status();
  auto logits = (*transformer)->Forward(tokens);
  EXPECT_TRUE(logits.ok()) << logits.status();
  return logits.value_or(std::vector<float>{});
}

std::vector<double> LogSoftmax(const float* logits, size_t n) {
  const double max = *std::max_element(logits, logits + n);
  double sum = 0;
  for (size_t i = 0; i < n; ++i) sum += std::exp(logits[i] - max);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = logits[i] - max - std::log(sum);
  return out;
}

struct Quality {
  double mean_kl = 0;
  double top1_agreement = 0;
};

Quality Compare(const std::vector<float>& native, const std::vector<float>& quant, size_t vocab) {
  Quality q;
  const size_t positions = native.size() / vocab;
  for (size_t pos = 0; pos < positions; ++pos) {
    const std::vector<double> p = LogSoftmax(&native[pos * vocab], vocab);
    const std::vector<double> r = LogSoftmax(&quant[pos * vocab], vocab);
    for (size_t i = 0; i < vocab; ++i) q.mean_kl += std::exp(p[i]) * (p[i] - r[i]);
    const auto argmax = [&](const float* row) { return std::max_element(row, row + vocab) - row; };
    q.top1_agreement += argmax(&native[pos * vocab]) == argmax(&quant[pos * vocab]);
  }
  q.mean_kl /= positions;
  q.top1_agreement /= positions;
  return q;
}

// Comma-separated token ids ("12,7,..."), as a fixture's tokens.txt.
std::vector<int32_t> ReadTokens(const fs::path& file) {
  std::vector<int32_t> tokens;
  std::ifstream in(file);
  std::string id;
  while (std::getline(in, id, ',')) tokens.push_back(std::stoi(id));
  return tokens;
}

// What this test measures, per model and comparison (docs/EFFICIENCY.md:
// "Quantized experts: quality against native", "VQ3R", "8-bit activations").
// The runs are deterministic (the same figures on 3 runs). A bound is the
// figure with a margin: mean KL at most kKlMargin times it, and top-1
// agreement at most one position below it (a near-tie may flip on another
// host's SIMD path).
struct Measured {
  std::string_view model;
  std::string_view comparison;  // experts format, or what is compared with what
  double mean_kl;               // nats
  double top1_agreement;        // share of positions
};

constexpr double kKlMargin = 1.5;

// The fixtures have 24 positions, the demo model 38. The bounds before these
// were KL < 0.01 (q8), 0.5 (q4, vq3r; demo 0.2) and top-1 >= 90% (q8), 50%
// (demo 70%): 4.5x (glm4 vq3r) to 10^5x (demo q8) the figures.
constexpr Measured kMeasured[] = {
    // Expert formats against the native conversion.
    {"deepseek_v3_f32", "q8", 7.21e-05, 24.0 / 24},
    {"deepseek_v3_f32", "q4", 0.0532, 19.0 / 24},
    {"deepseek_v3_f32", "vq3r", 0.0647, 19.0 / 24},
    {"qwen3_moe_f32", "q8", 2.26e-05, 24.0 / 24},
    {"qwen3_moe_f32", "q4", 0.0101, 22.0 / 24},
    {"qwen3_moe_f32", "vq3r", 0.0211, 19.0 / 24},
    {"glm4_moe_f32", "q8", 0.000105, 24.0 / 24},
    {"glm4_moe_f32", "q4", 0.0490, 17.0 / 24},
    {"glm4_moe_f32", "vq3r", 0.112, 18.0 / 24},
    {"mixtral_f32", "q8", 7.42e-05, 24.0 / 24},
    {"mixtral_f32", "q4", 0.0563, 19.0 / 24},
    {"mixtral_f32", "vq3r", 0.0778, 17.0 / 24},
    {"demo model", "q8", 5.19e-07, 38.0 / 38},
    {"demo model", "q4", 0.000466, 38.0 / 38},
    {"demo model", "vq3r", 0.00544, 37.0 / 38},
    // q4 experts with 8-bit activations against q4 with f32 activations (the
    // old bound: KL < 0.05).
    {"deepseek_v3_f32", "q4, q8 activations, against q4", 0.000631, 24.0 / 24},
    {"qwen3_moe_f32", "q4, q8 activations, against q4", 3.40e-05, 24.0 / 24},
    {"glm4_moe_f32", "q4, q8 activations, against q4", 0.0284, 23.0 / 24},
    {"mixtral_f32", "q4, q8 activations, against q4", 0.000152, 22.0 / 24},
    // Native MXFP4 experts, 8-bit against f32 activations (the old bounds:
    // KL < 0.01, top-1 >= 90%).
    {"gpt_oss_mxfp4", "mxfp4, q8 activations, against f32 activations", 0.000261, 24.0 / 24},
    {"kimi_k3_mxfp4", "mxfp4, q8 activations, against f32 activations", 0.00258, 23.0 / 24},
};

// Fails unless `q` is within the bounds of the measured figure for `model`
// and `comparison`; `positions` is the number of positions compared.
void ExpectAsMeasured(const Quality& q, std::string_view model, std::string_view comparison, size_t positions) {
  for (const Measured& m : kMeasured) {
    if (m.model != model || m.comparison != comparison) continue;
    EXPECT_LE(q.mean_kl, kKlMargin * m.mean_kl) << model << " " << comparison << ": measured " << m.mean_kl;
    EXPECT_GE(q.top1_agreement, m.top1_agreement - 1.0 / positions - 1e-9)
        << model << " " << comparison << ": measured " << m.top1_agreement;
    return;
  }
  ADD_FAILURE() << "kMeasured has no figure for " << model << " " << comparison;
}

class QuantQualityTest : public ::testing::TestWithParam<std::string> {};

// Each expert format of `checkpoint` against its native conversion on
// `tokens`, printed and checked as `label` (kMeasured).
void ExpectFormatsCloseToNative(const fs::path& checkpoint, const std::vector<int32_t>& tokens,
                                const std::string& label) {
  warp::testing::TempDir dir;
  WARP_ASSERT_OK(ConvertCheckpoint(checkpoint, dir / "native.warp", {}));
  const std::vector<float> native = RunPrompt(dir / "native.warp", tokens);
  const size_t vocab = native.size() / tokens.size();
  for (const std::string format : {"q8", "q4", "vq3r"}) {
    const fs::path path = dir / (format + ".warp");
    WARP_ASSERT_OK(ConvertCheckpoint(checkpoint, path, {.experts = format}));
    const Quality q = Compare(native, RunPrompt(path, tokens), vocab);
    std::printf("[quality] %s experts=%s: mean KL %.3g nats, top-1 agreement %.1f%%\n",
                label.c_str(), format.c_str(), q.mean_kl, 100 * q.top1_agreement);
    ExpectAsMeasured(q, label, format, tokens.size());
  }
}

TEST_P(QuantQualityTest, QuantizedExpertsStayCloseToNative) {
  // Tiny random-weight models are harder on quantization than trained ones.
  const fs::path fixture = warp::testing::FixtureDir(GetParam());
  ExpectFormatsCloseToNative(fixture, ReadTokens(fixture / "tokens.txt"), GetParam());
}

TEST_P(QuantQualityTest, EightBitActivationsCostLittleOverFourBitWeights) {
  // --activations q8 rounds the activations of every q4 expert matrix to 8 bits
  // a second time: measured against native and against q4 with f32 activations.
  const fs::path fixture = warp::testing::FixtureDir(GetParam());
  const std::vector<int32_t> tokens = ReadTokens(fixture / "tokens.txt");
  warp::testing::TempDir dir;
  WARP_ASSERT_OK(ConvertCheckpoint(fixture, dir / "native.warp", {}));
  WARP_ASSERT_OK(ConvertCheckpoint(fixture, dir / "q4.warp", {.experts = "q4"}));
  const std::vector<float> native = RunPrompt(dir / "native.warp", tokens);
  const std::vector<float> q4 = RunPrompt(dir / "q4.warp", tokens);
  const std::vector<float> q4_q8 = RunPrompt(dir / "q4.warp", tokens, /*q8_activations=*/true);
  const size_t vocab = native.size() / tokens.size();
  const Quality q4_against_native = Compare(native, q4, vocab);
  const Quality against_native = Compare(native, q4_q8, vocab);
  const Quality against_q4 = Compare(q4, q4_q8, vocab);
  std::printf(
      "[quality] %s experts=q4 activations=q8: against native mean KL %.3g nats, top-1 "
      "%.1f%%; against q4 with f32 activations mean KL %.3g, top-1 %.1f%%\n",
      GetParam().c_str(), against_native.mean_kl, 100 * against_native.top1_agreement,
      against_q4.mean_kl, 100 * against_q4.top1_agreement);
  EXPECT_GT(against_q4.mean_kl, 0.0) << "the q8 path did not run";
  // The second rounding moves the distribution far less than the weights' own:
  // no further from native than q4 is, but for a margin.
  ExpectAsMeasured(against_q4, GetParam(), "q4, q8 activations, against q4", tokens.size());
  EXPECT_LT(against_native.mean_kl, 1.1 * q4_against_native.mean_kl + 0.002);
}

// --activations q8 over MXFP4 experts kept as released (gpt-oss, Kimi K3): the
// only rounding is the activations', measured against the same container with
// f32 activations.
class Mxfp4ActivationsQualityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(Mxfp4ActivationsQualityTest, EightBitActivationsCostLittleOverNativeMxfp4Experts) {
  const fs::path fixture = warp::testing::FixtureDir(GetParam());
  const std::vector<int32_t> tokens = ReadTokens(fixture / "tokens.txt");
  warp::testing::TempDir dir;
  WARP_ASSERT_OK(ConvertCheckpoint(fixture, dir / "native.warp", {}));
  const std::vector<float> f32 = RunPrompt(dir / "native.warp", tokens);
  const std::vector<float> q8 = RunPrompt(dir / "native.warp", tokens, /*q8_activations=*/true);
  const Quality quality = Compare(f32, q8, f32.size() / tokens.size());
  std::printf(
      "[quality] %s experts=native mxfp4 activations=q8: against f32 activations mean KL %.3g "
      "nats, top-1 %.1f%%\n",
      GetParam().c_str(), quality.mean_kl, 100 * quality.top1_agreement);
  EXPECT_GT(quality.mean_kl, 0.0) << "the q8 path did not run";
  ExpectAsMeasured(quality, GetParam(), "mxfp4, q8 activations, against f32 activations", tokens.size());
}

INSTANTIATE_TEST_SUITE_P(Fixtures, Mxfp4ActivationsQualityTest,
                         ::testing::Values("gpt_oss_mxfp4", "kimi_k3_mxfp4"));

// The trained demo model (tests/demo_model) on its prompt and its own greedy
// continuation: trained weights, where quantization error is what a user sees.
TEST(DemoModelQuantQualityTest, QuantizedExpertsStayCloseToNative) {
  const fs::path model = warp::testing::SourceDir() / "tests" / "demo_model" / "kjv-moe";
  std::vector<int32_t> tokens;
  for (const char* file : {"prompt_ids.txt", "greedy_ids.txt"}) {
    const std::vector<int32_t> part = ReadTokens(model / "reference" / file);
    tokens.insert(tokens.end(), part.begin(), part.end());
  }
  ASSERT_GT(tokens.size(), 30u);
  ExpectFormatsCloseToNative(model, tokens, "demo model");
}

INSTANTIATE_TEST_SUITE_P(Fixtures, QuantQualityTest,
                         ::testing::Values("deepseek_v3_f32", "qwen3_moe_f32", "glm4_moe_f32",
                                           "mixtral_f32"));

}  // namespace
}  // namespace warp::computed
