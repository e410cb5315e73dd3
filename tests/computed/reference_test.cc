// The forward pass against the independent PyTorch reference
// (tests/reference/, fixtures committed under tests/fixtures/): each family is
// converted from its Hugging Face checkpoint and must reproduce the
// reference's logits and greedy continuation.

#include <cmath>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/format/container.h"
#include "common/store/expert_store.h"
#include "computed/convert/converter.h"
#include "computed/engine/thread_pool.h"
#include "computed/engine/transformer.h"
#include "computed/planner/planner.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

using ::warp::testing::FixtureDir;

std::vector<int32_t> ReadIds(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<int32_t> ids;
  for (absl::string_view piece : absl::StrSplit(text.str(), ',', absl::SkipWhitespace())) {
    int32_t id = 0;
    EXPECT_TRUE(absl::SimpleAtoi(piece, &id)) << path;
    ids.push_back(id);
  }
  return ids;
}

std::vector<float> ReadFloats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<float> values(static_cast<size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), values.size() * sizeof(float));
  return values;
}

size_t Argmax(const float* row, size_t n) { return std::max_element(row, row + n) - row; }

// A converted fixture, opened and ready to run.
class Model {
 public:
  Model(const fs::path& container_dir, size_t threads, uint32_t max_positions = 128)
      : pool_(threads) {
    auto container = Container::Open(container_dir);
    EXPECT_TRUE(container.ok()) << container.status();
    container_ = std::move(*container);
    auto store = ExpertStore::Open(container_, {});
    EXPECT_TRUE(store.ok()) << store.status();
    source_ = std::move(*store);
    auto transformer =
        Transformer::Create(container_, *source_, pool_, {.max_positions = max_positions});
    EXPECT_TRUE(transformer.ok()) << transformer.status();
    transformer_ = std::move(*transformer);
  }

  Transformer& operator*() { return *transformer_; }
  Transformer* operator->() { return transformer_.get(); }

  // Logits of `tokens` fed in chunks of `chunk`.
  std::vector<float> Prefill(const std::vector<int32_t>& tokens, size_t chunk) {
    std::vector<float> logits;
    for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
      const size_t n = std::min(chunk, tokens.size() - begin);
      auto part = transformer_->Forward({tokens.data() + begin, n});
      EXPECT_TRUE(part.ok()) << part.status();
      if (part.ok()) logits.insert(logits.end(), part->begin(), part->end());
    }
    return logits;
  }

 private:
  ThreadPool pool_;
  std::shared_ptr<const Container> container_;
  std::unique_ptr<ExpertStore> source_;
  std::unique_ptr<Transformer> transformer_;
};

class ReferenceTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto result = ConvertCheckpoint(FixtureDir(GetParam()), model_dir_, {});
    WARP_ASSERT_OK(result);
    tokens_ = ReadIds(FixtureDir(GetParam()) / "tokens.txt");
    expected_logits_ = ReadFloats(FixtureDir(GetParam()) / "logits.f32");
    ASSERT_GE(tokens_.size(), 20u);
  }

  warp::testing::TempDir dir_;
  fs::path model_dir_ = dir_ / "m.warp";
  std::vector<int32_t> tokens_;
  std::vector<float> expected_logits_;
};

TEST_P(ReferenceTest, PrefillLogitsMatchTheReference) {
  Model model(model_dir_, 2);
  const std::vector<float> logits = model.Prefill(tokens_, tokens_.size());
  ASSERT_EQ(logits.size(), expected_logits_.size());
  const size_t vocab = model->config().vocab_size;
  float max_diff = 0.0f;
  for (size_t i = 0; i < logits.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(logits[i] - expected_logits_[i]));
  }
  EXPECT_LE(max_diff, 1e-4f);
  for (size_t pos = 0; pos < tokens_.size(); ++pos) {
    EXPECT_EQ(Argmax(&logits[pos * vocab], vocab), Argmax(&expected_logits_[pos * vocab], vocab))
        << "position " << pos;
  }
}

TEST_P(ReferenceTest, GreedyTokensMatchTheReference) {
  Model model(model_dir_, 2);
  const size_t vocab = model->config().vocab_size;
  const std::vector<int32_t> expected = ReadIds(FixtureDir(GetParam()) / "greedy.txt");
  std::vector<float> logits = model.Prefill(tokens_, tokens_.size());
  std::vector<int32_t> generated;
  int32_t next = static_cast<int32_t>(Argmax(&logits[logits.size() - vocab], vocab));
  while (generated.size() < expected.size()) {
    generated.push_back(next);
    auto step = model->Forward({&next, 1});
    WARP_ASSERT_OK(step);
    next = static_cast<int32_t>(Argmax(step->data(), vocab));
  }
  EXPECT_EQ(generated, expected);
}

// Invariant 1: token-by-token decode, chunked prefill and thread counts give
// the same bits as one batched prefill.
TEST_P(ReferenceTest, IncrementalDecodeEqualsBatchedPrefillBitForBit) {
  Model batched(model_dir_, 2);
  const std::vector<float> reference = batched.Prefill(tokens_, tokens_.size());
  for (size_t chunk : {size_t{1}, size_t{5}}) {
    for (size_t threads : {size_t{1}, size_t{2}}) {
      Model model(model_dir_, threads);
      const std::vector<float> logits = model.Prefill(tokens_, chunk);
      ASSERT_EQ(logits.size(), reference.size());
      EXPECT_EQ(0, std::memcmp(logits.data(), reference.data(), logits.size() * sizeof(float)))
          << "chunk " << chunk << ", threads " << threads;
    }
  }
}

// Chat's Rewind: forgetting the last positions and running them again gives
// the bits of the first run. Attention caches continue where asked; a
// recurrent (KDA) layer from its checkpoint, or from 0 before it; a
// compressor (DeepSeek V4) within its open window, else as a recurrent layer.
TEST_P(ReferenceTest, RewindAndRecomputeGivesTheSameBits) {
  Model model(model_dir_, 2);
  const size_t vocab = model->config().vocab_size;
  bool recurrent = false, compressed = false;
  for (const LayerPlan& layer : model->plan().layers) {
    recurrent |= layer.mixer.kind == MixerKind::kKda;
    compressed |= layer.mixer.compression != CompressionKind::kNone;
  }
  const uint32_t mark = static_cast<uint32_t>(tokens_.size()) - 8;
  auto head = model->Forward(std::span(tokens_).first(mark));
  WARP_ASSERT_OK(head);
  model->Checkpoint();
  auto tail = model->Forward(std::span(tokens_).subspan(mark));
  WARP_ASSERT_OK(tail);
  std::vector<float> reference = *head;
  reference.insert(reference.end(), tail->begin(), tail->end());
  for (const uint32_t keep : {mark + 4, mark, mark - 3}) {
    const uint32_t from = model->Rewind(keep);
    const uint32_t checkpointed = keep >= mark ? mark : 0u;
    if (compressed) {
      EXPECT_TRUE(from == keep || from == checkpointed) << "rewind to " << keep << ": " << from;
    } else {
      EXPECT_EQ(from, !recurrent ? keep : checkpointed) << "rewind to " << keep;
    }
    auto again = model->Forward(std::span(tokens_).subspan(from));
    WARP_ASSERT_OK(again);
    EXPECT_EQ(0, std::memcmp(again->data(), reference.data() + from * vocab,
                             again->size() * sizeof(float)))
        << "rewind to " << keep;
  }
}

// What the layers' state holds is what `computed plan` counts for the same
// context (sliding layers: their window plus the rewind slack).
TEST_P(ReferenceTest, StateBytesEqualThePlannersFigure) {
  Model model(model_dir_, 1, /*max_positions=*/64);
  auto container = Container::Open(model_dir_);
  WARP_ASSERT_OK(container);
  auto plan = ComputePlan((*container)->manifest(), 64);
  WARP_ASSERT_OK(plan);
  EXPECT_EQ(model->StateBytes(), plan->kv_bytes);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReferenceTest,
                         ::testing::Values("deepseek_v3_f32", "deepseek_v3_bf16",
                                           "deepseek_v3_yarn_f32", "deepseek_v3_fp8",
                                           "deepseek_v3_noqlora_f32", "qwen3_moe_f32",
                                           "qwen3_moe_bf16", "qwen3_moe_nonorm_f32", "glm4_moe_f32",
                                           "mixtral_f32", "gpt_oss_bf16", "gpt_oss_mxfp4",
                                           "gpt_oss_yarn_truncate_f32", "kimi_linear_bf16",
                                           "kimi_k3_bf16", "kimi_k3_mxfp4", "deepseek_v4_bf16",
                                           "deepseek_v4_native", "glm5_next_bf16"));

}  // namespace
}  // namespace warp::computed
