// ImportGguf: a GGUF file's hyper-parameters as the family's config.json and
// its tensors under Hugging Face names (expert tensors split per expert,
// llama's Q/K rows restored), and what it refuses, each naming the key,
// tensor or file. (Logits against llama.cpp: tests/peer/agreement_test.py.)

#include "computed/convert/gguf_import.h"

#include <cstring>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/gguf_writer.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::GgufWriter;
using ::warp::testing::StatusIs;

constexpr uint32_t kF32 = 0, kQ8_0 = 8, kQ8_1 = 9;
constexpr uint64_t kHidden = 32, kHeads = 2, kKvHeads = 1, kHeadDim = 16, kExperts = 4, kFf = 32,
                   kVocab = 8;

std::string Floats(uint64_t n, float first = 0) {
  std::string out;
  for (uint64_t i = 0; i < n; ++i) out += GgufWriter::Pod(first + static_cast<float>(i));
  return out;
}

// One layer of `arch` ("qwen3moe" or "llama") at the sizes above, F32 but for
// Q8_0 experts; `skip_key` leaves one hyper-parameter out.
GgufWriter TinyModel(const std::string& arch, const std::string& skip_key = "") {
  GgufWriter w;
  w.Str("general.architecture", arch);
  auto key = [&](const std::string& name, uint32_t value) {
    if (name != skip_key) w.Uint32(arch + "." + name, value);
  };
  key("block_count", 1);
  key("embedding_length", kHidden);
  key("attention.head_count", kHeads);
  key("attention.head_count_kv", kKvHeads);
  key("attention.key_length", kHeadDim);
  key("expert_count", kExperts);
  key("expert_used_count", 2);
  key("expert_feed_forward_length", kFf);
  key("feed_forward_length", kFf);
  w.Float32(arch + ".attention.layer_norm_rms_epsilon", 1e-5f);
  w.Tensor("token_embd.weight", {kHidden, kVocab}, kF32, Floats(kHidden * kVocab));
  w.Tensor("output_norm.weight", {kHidden}, kF32, Floats(kHidden));
  w.Tensor("blk.0.attn_norm.weight", {kHidden}, kF32, Floats(kHidden));
  // Row r of Q holds r * 100 + column: the rows' order is visible after import.
  std::string q;
  for (uint64_t r = 0; r < kHeads * kHeadDim; ++r) q += Floats(kHidden, 100.0f * r);
  w.Tensor("blk.0.attn_q.weight", {kHidden, kHeads * kHeadDim}, kF32, q);
  w.Tensor("blk.0.attn_k.weight", {kHidden, kKvHeads * kHeadDim}, kF32,
           Floats(kHidden * kKvHeads * kHeadDim));
  w.Tensor("blk.0.attn_v.weight", {kHidden, kKvHeads * kHeadDim}, kF32,
           Floats(kHidden * kKvHeads * kHeadDim));
  w.Tensor("blk.0.attn_output.weight", {kHeads * kHeadDim, kHidden}, kF32,
           Floats(kHidden * kHeads * kHeadDim));
  w.Tensor("blk.0.ffn_norm.weight", {kHidden}, kF32, Floats(kHidden));
  w.Tensor("blk.0.ffn_gate_inp.weight", {kHidden, kExperts}, kF32, Floats(kHidden * kExperts));
  // Expert e's blocks are filled with byte e: its slice is visible after import.
  std::string experts;
  for (uint64_t e = 0; e < kExperts; ++e) experts += std::string(kFf * 34, static_cast<char>(e));
  for (const char* name : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
    w.Tensor(absl::StrCat("blk.0.", name, ".weight"), {kHidden, kFf, kExperts}, kQ8_0, experts);
  }
  return w;
}

class GgufImportTest : public ::testing::Test {
 protected:
  std::filesystem::path Write(const GgufWriter& w, const std::string& name = "m.gguf") {
    const auto path = dir_ / name;
    std::ofstream(path, std::ios::binary) << w.Bytes();
    return path;
  }
  absl::StatusOr<GgufImport> Import(const GgufWriter& w) { return ImportGguf(Write(w)); }

  warp::testing::TempDir dir_;
};

TEST_F(GgufImportTest, Qwen3MoeConfigAndTensorsUnderHuggingFaceNames) {
  absl::StatusOr<GgufImport> imported = Import(TinyModel("qwen3moe"));
  WARP_ASSERT_OK(imported);
  const auto& config = imported->config;
  EXPECT_EQ(config["model_type"], "qwen3_moe");
  EXPECT_EQ(config["hidden_size"], kHidden);
  EXPECT_EQ(config["num_key_value_heads"], kKvHeads);
  EXPECT_EQ(config["head_dim"], kHeadDim);
  EXPECT_EQ(config["num_experts"], kExperts);
  EXPECT_EQ(config["moe_intermediate_size"], kFf);
  EXPECT_EQ(config["vocab_size"], kVocab);
  EXPECT_EQ(config["norm_topk_prob"], true);
  EXPECT_EQ(config["tie_word_embeddings"], true);  // no output.weight
  EXPECT_NEAR(config["rms_norm_eps"].get<double>(), 1e-5, 1e-12);
  const Checkpoint& checkpoint = *imported->checkpoint;
  const SourceTensor* embed = checkpoint.Find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_EQ(embed->shape, (std::vector<uint64_t>{kVocab, kHidden}));  // outermost first
  for (uint64_t e = 0; e < kExperts; ++e) {
    const SourceTensor* down =
        checkpoint.Find(absl::StrCat("model.layers.0.mlp.experts.", e, ".down_proj.weight"));
    ASSERT_NE(down, nullptr) << e;
    EXPECT_EQ(down->dtype, SourceDtype::kGgmlQ8_0);
    EXPECT_EQ(down->shape, (std::vector<uint64_t>{kFf, kHidden}));
    std::string bytes(down->bytes, '\0');
    WARP_ASSERT_OK(checkpoint.Read(*down, 0, std::as_writable_bytes(std::span(bytes))));
    EXPECT_EQ(bytes, std::string(kFf * 34, static_cast<char>(e))) << "expert " << e;
  }
  // Q8_0 rows decode to float (the converter's path for --experts q4 or a trunk tensor).
  const SourceTensor* q = checkpoint.Find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  std::vector<float> row(kHidden);
  WARP_ASSERT_OK(checkpoint.ReadRowsAsFloat(*q, nullptr, 3, 1, row));
  EXPECT_EQ(row[1], 301.0f);  // qwen3moe rows are as stored
}

TEST_F(GgufImportTest, LlamaQueryRowsAreRestoredToHuggingFaceOrder) {
  absl::StatusOr<GgufImport> imported = Import(TinyModel("llama"));
  WARP_ASSERT_OK(imported);
  EXPECT_EQ(imported->config["model_type"], "mixtral");
  EXPECT_EQ(imported->config["num_local_experts"], kExperts);
  const Checkpoint& checkpoint = *imported->checkpoint;
  ASSERT_NE(checkpoint.Find("model.layers.0.block_sparse_moe.experts.3.w2.weight"), nullptr);
  const SourceTensor* q = checkpoint.Find("model.layers.0.self_attn.q_proj.weight");
  ASSERT_NE(q, nullptr);
  // Hugging Face row h * 16 + j * 8 + i was stored at h * 16 + 2 i + j.
  for (uint64_t hf_row : {0, 1, 7, 8, 9, 15, 16, 25}) {
    const uint64_t h = hf_row / kHeadDim, j = hf_row % kHeadDim / 8, i = hf_row % 8;
    std::vector<float> row(kHidden);
    WARP_ASSERT_OK(checkpoint.ReadRowsAsFloat(*q, nullptr, hf_row, 1, row));
    EXPECT_EQ(row[0], 100.0f * (h * kHeadDim + 2 * i + j)) << "row " << hf_row;
  }
}

TEST_F(GgufImportTest, RefusesAnUnknownArchitectureByName) {
  GgufWriter w;
  w.Str("general.architecture", "gpt2");
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kNotFound,
                                  HasSubstr("general.architecture \"gpt2\" is not supported")));
}

TEST_F(GgufImportTest, RefusesAMissingHyperParameterNamingTheKey) {
  EXPECT_THAT(
      Import(TinyModel("qwen3moe", "expert_count")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("qwen3moe.expert_count: missing")));
  EXPECT_THAT(Import(TinyModel("qwen3moe", "embedding_length")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("qwen3moe.embedding_length: missing")));
}

TEST_F(GgufImportTest, RefusesATypeItCannotComputeNamingTheTensor) {
  GgufWriter w = TinyModel("qwen3moe");
  w.Tensor("blk.0.attn_q_norm.weight", {32}, kQ8_1, std::string(36, '\0'));
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kUnimplemented,
                                  HasSubstr("tensor blk.0.attn_q_norm.weight is Q8_1")));
}

TEST_F(GgufImportTest, RefusesATensorNoRuleMaps) {
  GgufWriter w = TinyModel("qwen3moe");
  w.Tensor("rope_freqs.weight", {8}, kF32, Floats(8));
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("tensor rope_freqs.weight has no meaning")));
  GgufWriter past = TinyModel("qwen3moe");
  past.Tensor("blk.1.attn_norm.weight", {kHidden}, kF32, Floats(kHidden));
  EXPECT_THAT(Import(past), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("tensor blk.1.attn_norm.weight: layer 1 of 1")));
}

TEST_F(GgufImportTest, RefusesALlamaWithoutExperts) {
  EXPECT_THAT(Import(TinyModel("llama", "expert_count")),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("llama.expert_count: a llama without experts")));
}

TEST_F(GgufImportTest, RefusesAnUnsupportedRopeScaling) {
  GgufWriter w = TinyModel("qwen3moe");
  w.Str("qwen3moe.rope.scaling.type", "linear");
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kUnimplemented,
                                  HasSubstr("qwen3moe.rope.scaling.type: \"linear\"")));
}

TEST_F(GgufImportTest, SkipsMtpLayersAndRefusesTooMany) {
  GgufWriter w = TinyModel("qwen3moe", "block_count");
  w.Uint32("qwen3moe.block_count", 2);
  w.Uint32("qwen3moe.nextn_predict_layers", 1);
  w.Tensor("blk.1.nextn.eh_proj.weight", {2 * kHidden, kHidden}, kF32,
           Floats(2 * kHidden * kHidden));
  absl::StatusOr<GgufImport> imported = Import(w);
  WARP_ASSERT_OK(imported);
  EXPECT_EQ(imported->config["num_hidden_layers"], 1u);
  GgufWriter all = TinyModel("qwen3moe");
  all.Uint32("qwen3moe.nextn_predict_layers", 1);
  EXPECT_THAT(Import(all), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("qwen3moe.nextn_predict_layers 1 of 1 blocks")));
}

TEST_F(GgufImportTest, SplitSetsOpenFromTheirFirstFileAndCheckTheirNumbers) {
  GgufWriter first = TinyModel("qwen3moe");
  first.Uint32("split.count", 2);
  first.Uint32("split.no", 0);
  GgufWriter second;
  second.Uint32("split.count", 2);
  second.Uint32("split.no", 1);
  second.Tensor("output.weight", {kHidden, kVocab}, kF32, Floats(kHidden * kVocab));
  const auto path = Write(first, "m-00001-of-00002.gguf");
  Write(second, "m-00002-of-00002.gguf");
  absl::StatusOr<GgufImport> imported = ImportGguf(path);
  WARP_ASSERT_OK(imported);
  EXPECT_EQ(imported->config["tie_word_embeddings"], false);  // output.weight is in part 2
  EXPECT_NE(imported->checkpoint->Find("lm_head.weight"), nullptr);

  EXPECT_THAT(ImportGguf(dir_ / "m-00002-of-00002.gguf"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-00001-of-00002.gguf")));
  GgufWriter wrong;
  wrong.Uint32("split.count", 2);
  wrong.Uint32("split.no", 0);
  Write(wrong, "m-00002-of-00002.gguf");
  EXPECT_THAT(ImportGguf(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                         HasSubstr("split.no 0 of split.count 2; expected 1")));
  std::filesystem::remove(dir_ / "m-00002-of-00002.gguf");
  EXPECT_FALSE(ImportGguf(path).ok());  // a missing part
}

}  // namespace
}  // namespace warp::computed
