// ImportGguf: a GGUF file's hyper-parameters as the family's config.json and
// its tensors under Hugging Face names (expert tensors split per expert,
// llama's Q/K rows restored), and what it refuses, each naming the key,
// tensor or file. (Logits against llama.cpp: tests/peer/agreement_test.py.)

#include "computed/convert/gguf_import.h"

#include "computed/convert/converter.h"

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
    EXPECT_EQ(down->dtype, SourceDtype::kGgmlBlocks);
    EXPECT_EQ(down->ggml_format, TensorFormat::kGgmlQ8_0);
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
                                     HasSubstr("tensor blk.1.attn_norm.weight: layer 1, but "
                                               "qwen3moe.block_count is 1")));
}

TEST_F(GgufImportTest, RefusesALlamaWithoutExperts) {
  EXPECT_THAT(Import(TinyModel("llama", "expert_count")),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("llama.expert_count: a llama without experts")));
}

TEST_F(GgufImportTest, RefusesAnUnsupportedRopeScaling) {
  GgufWriter w = TinyModel("qwen3moe");
  w.Str("qwen3moe.rope.scaling.type", "linear");
  w.Float32("qwen3moe.rope.scaling.factor", 2.0f);
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kUnimplemented,
                                  HasSubstr("qwen3moe.rope.scaling.type: \"linear\"")));
  GgufWriter unscaled = TinyModel("qwen3moe");  // linear without a factor scales nothing
  unscaled.Str("qwen3moe.rope.scaling.type", "linear");
  WARP_EXPECT_OK(Import(unscaled));
  // YaRN as llama.cpp runs it: betas 32 and 1, whatever a file says.
  GgufWriter yarn = TinyModel("qwen3moe");
  yarn.Str("qwen3moe.rope.scaling.type", "yarn");
  yarn.Float32("qwen3moe.rope.scaling.factor", 4.0f);
  yarn.Uint32("qwen3moe.rope.scaling.original_context_length", 64);
  absl::StatusOr<GgufImport> imported = Import(yarn);
  WARP_ASSERT_OK(imported);
  const auto& scaling = imported->config["rope_scaling"];
  EXPECT_EQ(scaling["rope_type"], "yarn");
  EXPECT_EQ(scaling["factor"], 4.0);
  EXPECT_EQ(scaling["original_max_position_embeddings"], 64u);
  EXPECT_EQ(scaling["truncate"], true);
  yarn.Float32("qwen3moe.rope.scaling.yarn_beta_fast", 16.0f);
  EXPECT_THAT(Import(yarn), StatusIs(absl::StatusCode::kUnimplemented,
                                     HasSubstr("qwen3moe.rope.scaling.yarn_beta_fast: 16")));
}

TEST_F(GgufImportTest, RefusesLlamaQueryRowsThatAreNotWholeHeads) {
  GgufWriter w = TinyModel("llama", "attention.head_count");
  w.Uint32("llama.attention.head_count", 3);  // 32 rows over 3 heads
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("tensor blk.0.attn_q.weight: 32 rows are not heads of "
                                            "even size over 3 heads")));
}

// deepseek2 as llama.cpp's converter writes DeepSeek V3 and Kimi K2: MLA as MQA
// (head_count_kv 1, key/value lengths of the absorbed form, *_mla the heads'),
// kv_b split per head, sigmoid group routing, YaRN with 0.1 * mscale_all_dim.
constexpr uint64_t kQLora = 16, kKvLora = 8, kNope = 4, kRope = 2, kV = 6;

GgufWriter Deepseek2Model(const std::string& skip_key = "") {
  GgufWriter w;
  w.Str("general.architecture", "deepseek2");
  auto key = [&](const std::string& name, uint32_t value) {
    if (name != skip_key) w.Uint32("deepseek2." + name, value);
  };
  key("block_count", 1);
  key("embedding_length", kHidden);
  key("attention.head_count", kHeads);
  key("attention.head_count_kv", 1);
  key("attention.q_lora_rank", kQLora);
  key("attention.kv_lora_rank", kKvLora);
  key("attention.key_length", kKvLora + kRope);
  key("attention.value_length", kKvLora);
  key("attention.key_length_mla", kNope + kRope);
  key("attention.value_length_mla", kV);
  key("rope.dimension_count", kRope);
  key("expert_count", kExperts);
  key("expert_used_count", 2);
  key("expert_feed_forward_length", kFf);
  key("feed_forward_length", 2 * kFf);
  key("expert_shared_count", 1);
  key("expert_group_count", 2);
  key("expert_group_used_count", 1);
  key("expert_gating_func", 2);
  w.Float32("deepseek2.expert_weights_scale", 2.5f);
  w.Str("deepseek2.rope.scaling.type", "yarn");
  w.Float32("deepseek2.rope.scaling.factor", 40.0f);
  w.Uint32("deepseek2.rope.scaling.original_context_length", 4096);
  if (skip_key != "rope.scaling.yarn_log_multiplier") {
    w.Float32("deepseek2.rope.scaling.yarn_log_multiplier", 0.1f);
  }
  w.Tensor("token_embd.weight", {kHidden, kVocab}, kF32, Floats(kHidden * kVocab));
  // k_b [heads, kv_lora, nope] and v_b [heads, v, kv_lora]: value = element index.
  w.Tensor("blk.0.attn_k_b.weight", {kNope, kKvLora, kHeads}, kF32,
           Floats(kNope * kKvLora * kHeads));
  w.Tensor("blk.0.attn_v_b.weight", {kKvLora, kV, kHeads}, kF32, Floats(kKvLora * kV * kHeads));
  w.Tensor("blk.0.exp_probs_b.bias", {kExperts}, kF32, Floats(kExperts));
  return w;
}

TEST_F(GgufImportTest, Deepseek2IsDeepseekV3WithKvBSplitPerHead) {
  absl::StatusOr<GgufImport> imported = Import(Deepseek2Model());
  WARP_ASSERT_OK(imported);
  const auto& config = imported->config;
  EXPECT_EQ(config["model_type"], "deepseek_v3");
  EXPECT_EQ(config["q_lora_rank"], kQLora);
  EXPECT_EQ(config["kv_lora_rank"], kKvLora);
  EXPECT_EQ(config["qk_nope_head_dim"], kNope);
  EXPECT_EQ(config["qk_rope_head_dim"], kRope);
  EXPECT_EQ(config["v_head_dim"], kV);
  EXPECT_EQ(config["kv_b_split"], true);
  EXPECT_EQ(config["num_key_value_heads"], kHeads);  // not llama.cpp's MQA 1
  EXPECT_EQ(config["n_routed_experts"], kExperts);
  EXPECT_EQ(config["n_group"], 2u);
  EXPECT_EQ(config["topk_group"], 1u);
  EXPECT_EQ(config["intermediate_size"], 2 * kFf);
  EXPECT_NEAR(config["routed_scaling_factor"].get<double>(), 2.5, 1e-6);
  EXPECT_NEAR(config["rope_scaling"]["mscale_all_dim"].get<double>(), 1.0, 1e-6);
  EXPECT_NEAR(config["rope_scaling"]["mscale"].get<double>(), 1.0, 1e-6);
  const Checkpoint& checkpoint = *imported->checkpoint;
  const SourceTensor* k_b = checkpoint.Find("model.layers.0.self_attn.k_b_proj.weight");
  ASSERT_NE(k_b, nullptr);
  EXPECT_EQ(k_b->shape, (std::vector<uint64_t>{kHeads * kKvLora, kNope}));  // heads merged
  std::vector<float> row(kNope);
  WARP_ASSERT_OK(checkpoint.ReadRowsAsFloat(*k_b, nullptr, kKvLora + 3, 1, row));
  EXPECT_EQ(row[0], static_cast<float>((kKvLora + 3) * kNope));  // head 1, latent dim 3
  const SourceTensor* v_b = checkpoint.Find("model.layers.0.self_attn.v_b_proj.weight");
  ASSERT_NE(v_b, nullptr);
  EXPECT_EQ(v_b->shape, (std::vector<uint64_t>{kHeads * kV, kKvLora}));
  EXPECT_NE(checkpoint.Find("model.layers.0.mlp.gate.e_score_correction_bias"), nullptr);
}

TEST_F(GgufImportTest, RefusesDeepseek2SoftmaxRoutingAndYarnWithoutItsMultiplier) {
  EXPECT_THAT(Import(Deepseek2Model("expert_gating_func")),  // llama.cpp: softmax (V2)
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("deepseek2.expert_gating_func: 1 (softmax, DeepSeek V2)")));
  EXPECT_THAT(Import(Deepseek2Model("rope.scaling.yarn_log_multiplier")),
              StatusIs(absl::StatusCode::kUnimplemented,
                       HasSubstr("deepseek2.rope.scaling.yarn_log_multiplier: missing")));
  EXPECT_THAT(Import(Deepseek2Model("attention.kv_lora_rank")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("deepseek2.attention.kv_lora_rank: missing")));
}

// gpt-oss as llama.cpp's converter writes it: gate and up experts apart, with
// [experts, rows] biases; sinks; the sliding pattern left to its default.
GgufWriter GptOssModel(bool with_up = true) {
  GgufWriter w;
  w.Str("general.architecture", "gpt-oss");
  for (const auto& [name, value] :
       {std::pair{"block_count", uint64_t{2}}, {"embedding_length", kHidden},
        {"attention.head_count", kHeads}, {"attention.head_count_kv", kKvHeads},
        {"attention.key_length", kHeadDim}, {"expert_count", kExperts},
        {"expert_used_count", uint64_t{2}}, {"expert_feed_forward_length", kFf},
        {"attention.sliding_window", uint64_t{128}}}) {
    w.Uint32(absl::StrCat("gpt-oss.", name), static_cast<uint32_t>(value));
  }
  w.Tensor("token_embd.weight", {kHidden, kVocab}, kF32, Floats(kHidden * kVocab));
  w.Tensor("blk.0.attn_sinks.weight", {kHeads}, kF32, Floats(kHeads));
  w.Tensor("blk.1.attn_sinks.weight", {kHeads}, kF32, Floats(kHeads));  // each layer has one
  // Gate rows hold 1000 + r * cols + c, up rows 2000 + ...; biases 10 + i and 20 + i.
  w.Tensor("blk.0.ffn_gate_exps.weight", {kHidden, kFf, kExperts}, kF32,
           Floats(kHidden * kFf * kExperts, 1000));
  w.Tensor("blk.0.ffn_gate_exps.bias", {kFf, kExperts}, kF32, Floats(kFf * kExperts, 10));
  if (with_up) {
    w.Tensor("blk.0.ffn_up_exps.weight", {kHidden, kFf, kExperts}, kF32,
             Floats(kHidden * kFf * kExperts, 2000));
    w.Tensor("blk.0.ffn_up_exps.bias", {kFf, kExperts}, kF32, Floats(kFf * kExperts, 20));
  }
  return w;
}

TEST_F(GgufImportTest, GptOssInterleavesGateAndUpRowsPerExpertAsTheReleaseDoes) {
  absl::StatusOr<GgufImport> imported = Import(GptOssModel());
  WARP_ASSERT_OK(imported);
  const auto& config = imported->config;
  EXPECT_EQ(config["model_type"], "gpt_oss");
  EXPECT_EQ(config["num_local_experts"], kExperts);
  EXPECT_EQ(config["intermediate_size"], kFf);
  EXPECT_EQ(config["sliding_window"], 128u);
  EXPECT_EQ(config["layer_types"], (nlohmann::ordered_json{"sliding_attention", "full_attention"}));
  const Checkpoint& checkpoint = *imported->checkpoint;
  EXPECT_NE(checkpoint.Find("model.layers.0.self_attn.sinks"), nullptr);  // no ".weight"
  const uint64_t e = 2;
  const SourceTensor* gate_up =
      checkpoint.Find(absl::StrCat("model.layers.0.mlp.experts.", e, ".gate_up_proj.weight"));
  ASSERT_NE(gate_up, nullptr);
  EXPECT_EQ(gate_up->shape, (std::vector<uint64_t>{2 * kFf, kHidden}));
  std::vector<float> rows(2 * kFf * kHidden);
  WARP_ASSERT_OK(checkpoint.ReadRowsAsFloat(*gate_up, nullptr, 0, 2 * kFf, rows));
  for (uint64_t j : {uint64_t{0}, uint64_t{1}, kFf - 1}) {
    const float stored = static_cast<float>((e * kFf + j) * kHidden + 5);
    EXPECT_EQ(rows[2 * j * kHidden + 5], 1000 + stored) << "gate row " << j;
    EXPECT_EQ(rows[(2 * j + 1) * kHidden + 5], 2000 + stored) << "up row " << j;
  }
  const SourceTensor* bias =
      checkpoint.Find(absl::StrCat("model.layers.0.mlp.experts.", e, ".gate_up_proj.bias"));
  ASSERT_NE(bias, nullptr);
  EXPECT_EQ(bias->shape, (std::vector<uint64_t>{2 * kFf}));
  std::vector<float> values(2 * kFf);
  WARP_ASSERT_OK(checkpoint.ReadRowsAsFloat(*bias, nullptr, 0, 1, values));
  EXPECT_EQ(values[6], 10.0f + static_cast<float>(e * kFf + 3));
  EXPECT_EQ(values[7], 20.0f + static_cast<float>(e * kFf + 3));
  EXPECT_EQ(checkpoint.Find("model.layers.0.mlp.experts.0.up_proj.weight"), nullptr);
}

TEST_F(GgufImportTest, RefusesGptOssGateWithoutItsUpPartner) {
  EXPECT_THAT(Import(GptOssModel(/*with_up=*/false)),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("tensor blk.0.ffn_gate_exps.weight: blk.0.ffn_up_exps.weight, "
                                 "whose rows interleave with it, is missing")));
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

// Fuzzing finding: gpt-oss sized a per-layer table by block_count first, and
// 2^40 blocks ran out of memory before any check.
TEST_F(GgufImportTest, RefusesABlockCountAboveTheLayerBoundBeforeSizingAnything) {
  for (const std::string arch : {"qwen3moe", "gpt-oss"}) {
    GgufWriter w = TinyModel(arch, "block_count");
    w.Raw(arch + ".block_count", /*GGUF uint64=*/10, GgufWriter::Pod(uint64_t{1} << 40));
    EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr(arch + ".block_count: 1099511627776 is above "
                                                     "WARP's bound of 1024")));
  }
}

// The outside probe (issue 44, finding 9): `rope.freq_base` renamed converted
// with rope_theta 10,000 instead of 1e6 without a word. The misspelled key is
// reported as one nothing read, and the default as taken.
TEST_F(GgufImportTest, AMisspelledKeyIsReportedAndItsDefaultNamed) {
  GgufWriter w = TinyModel("qwen3moe");
  w.Float32("qwen3moe.rope.freq_bsae", 1e6f);
  absl::StatusOr<GgufImport> imported = Import(w);
  WARP_ASSERT_OK(imported);
  EXPECT_EQ(imported->config["rope_theta"], 10000.0);
  EXPECT_EQ(imported->unread_keys, std::vector<std::string>{"qwen3moe.rope.freq_bsae"});
  EXPECT_THAT(imported->defaults_taken,
              ::testing::Contains("qwen3moe.rope.freq_base = 10000"));
  EXPECT_THAT(imported->defaults_taken,
              ::testing::Contains("qwen3moe.context_length = 4096"));
  // Spelled right, the key is read and nothing is left over.
  GgufWriter right = TinyModel("qwen3moe");
  right.Float32("qwen3moe.rope.freq_base", 1e6f);
  imported = Import(right);
  WARP_ASSERT_OK(imported);
  EXPECT_EQ(imported->config["rope_theta"], 1e6);
  EXPECT_THAT(imported->unread_keys, ::testing::IsEmpty());
  EXPECT_THAT(imported->defaults_taken,
              ::testing::Not(::testing::Contains("qwen3moe.rope.freq_base = 10000")));
  // rope.dimension_count, once unread, is read and must be the whole head.
  GgufWriter partial = TinyModel("qwen3moe");
  partial.Uint32("qwen3moe.rope.dimension_count", kHeadDim / 2);
  EXPECT_THAT(Import(partial), StatusIs(absl::StatusCode::kUnimplemented,
                                        HasSubstr("qwen3moe.rope.dimension_count: 8 (partial "
                                                  "rope) is not supported: 16")));
}

TEST_F(GgufImportTest, RefusesAContextLengthOfZeroNamingTheKey) {
  GgufWriter w = TinyModel("qwen3moe");
  w.Uint32("qwen3moe.context_length", 0);
  EXPECT_THAT(Import(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("m.gguf: qwen3moe.context_length: 0")));
}

// The probe's "51 GGUF errors mention config.json": a value the config
// refuses is named by the GGUF key it came from, in the GGUF file.
TEST_F(GgufImportTest, AConfigRefusalNamesTheGgufFileAndKeyNotConfigJson) {
  GgufWriter w = TinyModel("qwen3moe", "expert_used_count");
  w.Uint32("qwen3moe.expert_used_count", 9);
  absl::StatusOr<GgufImport> imported = Import(w);
  EXPECT_THAT(imported, StatusIs(absl::StatusCode::kInvalidArgument,
                                 HasSubstr("m.gguf: qwen3moe.expert_used_count (config "
                                           "num_experts_per_tok): 9 is not in [1, 4]")));
  EXPECT_THAT(imported.status().message(), ::testing::Not(HasSubstr("config.json")));
}

// The probe's misattributed counts: each names the key that disagrees with the tensors.
TEST_F(GgufImportTest, ACountThatDisagreesWithTheTensorsNamesTheKeyAndTensor) {
  GgufWriter experts = TinyModel("qwen3moe", "expert_count");
  experts.Uint32("qwen3moe.expert_count", 8);
  EXPECT_THAT(Import(experts),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m.gguf: tensor blk.0.ffn_gate_exps.weight: holds 4 experts, "
                                 "but qwen3moe.expert_count is 8")));
  GgufWriter more_blocks = TinyModel("qwen3moe", "block_count");
  more_blocks.Uint32("qwen3moe.block_count", 2);
  EXPECT_THAT(Import(more_blocks),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("m.gguf: qwen3moe.block_count is 2, but no tensor of layer 1 "
                                 "(blk.1.*) is in the file")));
  GgufWriter fewer_blocks = TinyModel("qwen3moe");
  fewer_blocks.Tensor("blk.1.attn_norm.weight", {kHidden}, kF32, Floats(kHidden));
  EXPECT_THAT(Import(fewer_blocks),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m.gguf: tensor blk.1.attn_norm.weight: layer 1, but "
                                 "qwen3moe.block_count is 1")));
  // A size the tensors disagree with is found by the converter; it names the
  // GGUF tensor and the metadata, not a config.json the user does not have.
  GgufWriter heads = TinyModel("qwen3moe", "attention.head_count");
  heads.Uint32("qwen3moe.attention.head_count", 4);
  const absl::Status converted =
      ConvertCheckpoint(Write(heads), dir_ / "out.warp", {.direct_io = false}).status();
  EXPECT_THAT(converted, StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("tensor blk.0.attn_q.weight (as "
                                            "model.layers.0.self_attn.q_proj.weight) has shape "
                                            "[32, 32]; the GGUF metadata's sizes imply [64, 32]")));
  EXPECT_THAT(converted.message(), ::testing::Not(HasSubstr("config.json")));
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
