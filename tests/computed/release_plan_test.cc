// `computed plan --config` knows each release's formats (ReleaseFormats):
// - a fixture in its release's own formats, converted with the defaults, and
//   planned from its config.json alone, gives the same record and trunk bytes;
// - the published configs of tests/configs open on the machines they are
//   meant for (issue 43's table), records sized as the release ships them;
// - a quantization_config WARP does not convert is refused by name, and so is
//   a config whose experts contradict its tensors.

#include <fstream>
#include <map>
#include <string>

#include "common/byte_size.h"
#include "common/format/container.h"
#include "common/memory/memory_limits.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/release_formats.h"
#include "computed/model/trunk_choice.h"
#include "computed/planner/planner.h"
#include "computed/synth/planned_release.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/v41_fp8_layout.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint64_t kGiB = uint64_t{1} << 30;

json ReadJson(const std::filesystem::path& path) {
  std::ifstream in(path);
  return json::parse(in);
}

// Converts checkpoint `fixture` with `--trunk trunk` and plans it from its
// config.json: the same trunk bytes, and every bank's record bytes and matrix formats.
void ExpectPlanGivesTheConvertedBytes(const std::filesystem::path& fixture,
                                      const std::string& trunk) {
  SCOPED_TRACE(fixture.string() + " --trunk " + trunk);
  warp::testing::TempDir dir;
  const std::string out = (dir / "m.warp").string();
  auto converted = warp::testing::RunBinary(
      "computed", "convert --quiet --trunk " + trunk + " " + fixture.string() + " " + out);
  ASSERT_EQ(converted.exit_code, 0) << converted.output;
  auto container = Container::Open(out);
  WARP_ASSERT_OK(container);
  const Manifest& written = (*container)->manifest();

  auto planned = PlanRelease(ReadJson(fixture / "config.json"), {.trunk = trunk}, "config.json");
  WARP_ASSERT_OK(planned);
  const Manifest& plan = planned->manifest;
  EXPECT_EQ(plan.trunk_bytes, written.trunk_bytes) << planned->formats;
  ASSERT_EQ(plan.banks.size(), written.banks.size());
  for (size_t b = 0; b < plan.banks.size(); ++b) {
    EXPECT_EQ(plan.banks[b].layer, written.banks[b].layer);
    EXPECT_EQ(plan.banks[b].record_bytes, written.banks[b].record_bytes)
        << "layer " << plan.banks[b].layer << ", " << planned->formats;
    ASSERT_EQ(plan.banks[b].matrices.size(), written.banks[b].matrices.size());
    for (size_t t = 0; t < plan.banks[b].matrices.size(); ++t) {
      EXPECT_EQ(plan.banks[b].matrices[t].format, written.banks[b].matrices[t].format)
          << plan.banks[b].matrices[t].name;
    }
  }
}

class PlanAgainstConvertTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PlanAgainstConvertTest, PlanGivesTheConvertedRecordAndTrunkBytes) {
  ExpectPlanGivesTheConvertedBytes(warp::testing::FixtureDir(GetParam()), "native");
}

// DeepSeek V4.1 Flash's layout: FP8 per 32x32 tile (weight_block_size [32, 32]),
// FP4 experts. The plan sizes the dense FP8 matrices as f8_e4m3_b32, as convert
// keeps them.
TEST(PlanAgainstConvertTest, Fp8Per32x32TileIsPlannedAsConvertKeepsIt) {
  warp::testing::TempDir dir;
  const std::filesystem::path v41 = dir / "v41";
  v41_layout::WriteV41Layout(warp::testing::FixtureDir("deepseek_v4_native"), v41);
  for (const char* trunk : {"native", "mixed", "q8"}) ExpectPlanGivesTheConvertedBytes(v41, trunk);
  auto planned = PlanRelease(ReadJson(v41 / "config.json"), {}, "config.json");
  WARP_ASSERT_OK(planned);
  EXPECT_THAT(planned->formats, HasSubstr("release FP8 E4M3 32x32 blocks (UE8M0 scales)"));
}

// At V4 Flash's size, 32x32 tiles plan each FP8 matrix's f32 scales as 4 bytes
// per 1024 elements instead of per 16384: the trunk grows by exactly that.
TEST(PlanAgainstConvertTest, Fp8Per32x32TileSizesTheScalesPerTile) {
  const json v4 = ReadJson(warp::testing::SourceDir() / "tests/configs/deepseek_v4_flash.config.json");
  json v41 = v4;
  v41["quantization_config"]["weight_block_size"] = {32, 32};
  auto planned_v4 = PlanRelease(v4, {}, "v4");
  auto planned_v41 = PlanRelease(v41, {}, "v41");
  WARP_ASSERT_OK(planned_v4);
  WARP_ASSERT_OK(planned_v41);
  auto model = ParseModelConfig("deepseek_v4", v4);
  WARP_ASSERT_OK(model);
  auto release = ReadReleaseFormats(v41, "v41");
  WARP_ASSERT_OK(release);
  const ModelFamily& family = FamilyOf(Architecture::kDeepseekV4);
  auto aligned = [](uint64_t bytes) { return (bytes + 4095) / 4096 * 4096; };
  uint64_t extra = 0, fp8_matrices = 0;
  for (const TrunkTensor& tensor : TrunkTensors(*model, TensorFormat::kF32)) {
    if (tensor.f32 || release->TrunkMatrix(family, tensor.spec.name) != TensorFormat::kF8E4M3B32) {
      continue;
    }
    ++fp8_matrices;
    extra += aligned(ScaleBytes(TensorFormat::kF8E4M3B32, tensor.spec.shape)) -
             aligned(ScaleBytes(TensorFormat::kF8E4M3B128, tensor.spec.shape));
  }
  EXPECT_GT(fp8_matrices, 100u);
  EXPECT_GT(extra, 0u);
  EXPECT_EQ(planned_v41->manifest.trunk_bytes, planned_v4->manifest.trunk_bytes + extra)
      << planned_v41->formats;
}

TEST(PlanAgainstConvertTest, QuantizedTrunksArePlannedAsConvertWritesThem) {
  for (const char* fixture : {"deepseek_v3_fp8", "kimi_k3_mxfp4", "glm5_next_bf16",
                              "deepseek_v4_native", "gpt_oss_mxfp4"}) {
    for (const char* trunk : {"bf16", "q8", "q4", "mixed", "q4:attention,shared_experts"}) {
      ExpectPlanGivesTheConvertedBytes(warp::testing::FixtureDir(fixture), trunk);
    }
  }
}

// Every family, each in the formats its release ships: block FP8 with F32
// scales (DeepSeek V3 / Kimi K2), FP8 with UE8M0 scales and FP4 experts
// (DeepSeek V4), MXFP4 (gpt-oss), compressed-tensors MXFP4 (Kimi K3), BF16 and F32.
INSTANTIATE_TEST_SUITE_P(Families, PlanAgainstConvertTest,
                         ::testing::Values("deepseek_v3_fp8", "deepseek_v3_bf16",
                                           "deepseek_v4_native", "deepseek_v4_bf16",
                                           "gpt_oss_mxfp4", "gpt_oss_bf16", "kimi_k3_mxfp4",
                                           "kimi_linear_bf16", "glm5_next_bf16", "glm4_moe_f32",
                                           "qwen3_moe_bf16", "mixtral_f32"));

struct ReleaseRow {
  const char* config;  // tests/configs/NAME.config.json
  const char* trunk;   // --trunk
  uint64_t ram;        // --ram
  uint64_t min_cache;  // the default must leave at least this expert cache
  // One expert as the release ships it: every matrix's data and scales.
  uint64_t release_expert_bytes;
  uint32_t matrices;  // of a record, each 4 KiB aligned with its scales
};

class SeedMachinesTest : public ::testing::TestWithParam<ReleaseRow> {};

TEST_P(SeedMachinesTest, TheDefaultLeavesTheCacheTheTargetAsks) {
  const ReleaseRow& row = GetParam();
  const std::filesystem::path path =
      warp::testing::SourceDir() / "tests/configs" / (std::string(row.config) + ".config.json");
  auto planned = PlanRelease(ReadJson(path), {.trunk = row.trunk}, path.string());
  WARP_ASSERT_OK(planned);
  auto plan = ComputePlan(planned->manifest, 4096, path.string());
  WARP_ASSERT_OK(plan);
  const MemoryLimits machine{
      .mem_total_bytes = row.ram, .mem_available_bytes = row.ram, .assumed = "--ram"};
  auto decision = ResolveBudget(*plan, std::nullopt, machine);
  WARP_ASSERT_OK(decision) << planned->formats;
  EXPECT_GE(decision->cache_bytes, row.min_cache)
      << planned->formats << ": trunk " << FormatBytes(plan->trunk_bytes) << ", kv "
      << FormatBytes(plan->kv_bytes) << ", floor " << FormatBytes(plan->floor_bytes);
  // Records as the release's own bytes, give or take each sub-tensor's 4 KiB
  // alignment (data and scales) and the 4 KiB footer page.
  for (const BankEntry& bank : planned->manifest.banks) {
    EXPECT_GE(bank.record_bytes, row.release_expert_bytes) << "layer " << bank.layer;
    EXPECT_LE(bank.record_bytes, row.release_expert_bytes + (2 * row.matrices + 1) * 4096)
        << "layer " << bank.layer;
  }
}

// FP8 E4M3 [rows, cols] with F32 scales per 128x128 block; MXFP4 [rows, cols]
// with one E8M0 byte per 32.
constexpr uint64_t Fp8(uint64_t rows, uint64_t cols) {
  return rows * cols + ((rows + 127) / 128) * ((cols + 127) / 128) * 4;
}
constexpr uint64_t Mxfp4(uint64_t rows, uint64_t cols) { return rows * cols / 2 + rows * cols / 32; }

INSTANTIATE_TEST_SUITE_P(
    Releases, SeedMachinesTest,
    ::testing::Values(
        // Kimi K3: 896 latent experts of [3072, 3584], compressed-tensors MXFP4.
        ReleaseRow{"kimi_k3", "mixed", 64 * kGiB, 10 * kGiB, 3 * Mxfp4(3072, 3584), 3},
        // Kimi K2: 384 experts of [2048, 7168], FP8 with F32 weight_scale_inv.
        ReleaseRow{"kimi_k2", "native", 64 * kGiB, 10 * kGiB, 3 * Fp8(2048, 7168), 3},
        // GLM-5.3-Flash: 288 experts of [2048, 4096], FP8.
        ReleaseRow{"glm5_next_flash_fp8", "mixed", 16 * kGiB, 2 * kGiB, 3 * Fp8(2048, 4096), 3},
        // DeepSeek V4 Flash: 256 FP4 experts of [2048, 4096] (E8M0 per 32).
        ReleaseRow{"deepseek_v4_flash", "native", 16 * kGiB, 2 * kGiB, 3 * Mxfp4(2048, 4096), 3},
        // DeepSeek V4.1 Flash: 384 FP4 experts of [2304, 5120], 18,800,640 B
        // as released; FP8 per 32x32 trunk, and its engram cache beside it.
        ReleaseRow{"deepseek_v41_flash", "native", 16 * kGiB, 2 * kGiB, 3 * Mxfp4(2304, 5120), 3},
        // Qwen3-235B-A22B: 128 BF16 experts of [1536, 4096].
        ReleaseRow{"qwen3_235b", "q8", 32 * kGiB, 4 * kGiB, 3 * 1536 * 4096 * 2, 3},
        // Kimi-Linear-48B-A3B: 256 BF16 experts of [1024, 2304].
        ReleaseRow{"kimi_linear", "mixed", 4 * kGiB, 1 * kGiB, 3 * 1024 * 2304 * 2, 3},
        // gpt-oss-120b: 128 MXFP4 experts, gate_up [5760, 2880] and down
        // [2880, 2880], with f32 biases (the release's BF16 biases are widened).
        ReleaseRow{"gpt_oss_120b", "native", 16 * kGiB, 4 * kGiB,
                   Mxfp4(5760, 2880) + Mxfp4(2880, 2880) + (5760 + 2880) * 4, 4}));

TEST(ReleaseFormatsTest, EachReleaseIsReadAsItShips) {
  auto read = [](const char* name) {
    return ReadReleaseFormats(
        ReadJson(warp::testing::SourceDir() / "tests/configs" / (std::string(name) + ".config.json")),
        name);
  };
  auto k2 = read("kimi_k2");
  WARP_ASSERT_OK(k2);
  EXPECT_EQ(k2->experts, TensorFormat::kF8E4M3B128);
  EXPECT_TRUE(k2->block_fp8);
  auto v4 = read("deepseek_v4_flash");
  WARP_ASSERT_OK(v4);
  EXPECT_EQ(v4->experts, TensorFormat::kMxfp4B32);
  EXPECT_TRUE(v4->block_fp8);
  EXPECT_THAT(v4->description, HasSubstr("UE8M0"));
  EXPECT_EQ(v4->fp8, TensorFormat::kF8E4M3B128);
  // DeepSeek V4.1 Flash: the same FP8 per 32x32 tile, FP4 experts.
  const json v41_quantization = {{"quant_method", "fp8"},
                                 {"activation_scheme", "dynamic"},
                                 {"weight_block_size", {32, 32}},
                                 {"scale_fmt", "ue8m0"},
                                 {"expert_dtype", "fp4"}};
  auto v41 = ReadReleaseFormats({{"model_type", "deepseek_v4"},
                                 {"quantization_config", v41_quantization}},
                                "v41/config.json");
  WARP_ASSERT_OK(v41);
  EXPECT_TRUE(v41->block_fp8);
  EXPECT_EQ(v41->fp8, TensorFormat::kF8E4M3B32);
  EXPECT_EQ(v41->experts, TensorFormat::kMxfp4B32);
  EXPECT_EQ(v41->description, "FP8 E4M3 32x32 blocks (UE8M0 scales), experts mxfp4_b32");
  EXPECT_EQ(v41->TrunkMatrix(FamilyOf(Architecture::kDeepseekV4), "layers.3.attn.wq_a.weight"),
            TensorFormat::kF8E4M3B32);
  json fp8_experts = v41_quantization;
  fp8_experts["expert_dtype"] = "fp8";  // in the release's tiles
  auto fp8 = ReadReleaseFormats({{"model_type", "deepseek_v4"},
                                 {"quantization_config", fp8_experts}},
                                "v41/config.json");
  WARP_ASSERT_OK(fp8);
  EXPECT_EQ(fp8->experts, TensorFormat::kF8E4M3B32);
  auto k3 = read("kimi_k3");
  WARP_ASSERT_OK(k3);
  EXPECT_EQ(k3->experts, TensorFormat::kMxfp4B32);
  EXPECT_FALSE(k3->block_fp8);
  auto qwen = read("qwen3_235b");
  WARP_ASSERT_OK(qwen);
  EXPECT_EQ(qwen->experts, TensorFormat::kBF16);
  EXPECT_FALSE(qwen->declares_experts);
  // GLM-5.3-Flash names what stays BF16: its KDA layers, the MLA's kv_b_proj.
  auto glm = read("glm5_next_flash_fp8");
  WARP_ASSERT_OK(glm);
  const ModelFamily& family = FamilyOf(Architecture::kGlm5Next);
  EXPECT_EQ(glm->TrunkMatrix(family, "model.layers.3.self_attn.q_a_proj.weight"),
            TensorFormat::kF8E4M3B128);
  EXPECT_EQ(glm->TrunkMatrix(family, "model.layers.3.self_attn.kv_b_proj.weight"),
            TensorFormat::kBF16);
  EXPECT_EQ(glm->TrunkMatrix(family, "model.layers.0.self_attn.o_proj.weight"), TensorFormat::kBF16);
  // As WARP names the trunk (the release's own tensor names): the KDA layers'
  // projections the release ships in BF16 (they were planned as FP8, 4.6 GiB
  // short of the release's trunk).
  EXPECT_EQ(glm->TrunkMatrix(family, "model.language_model.layers.0.self_attn.o_proj.weight"),
            TensorFormat::kBF16);
  EXPECT_EQ(glm->TrunkMatrix(family, "model.language_model.layers.3.self_attn.q_a_proj.weight"),
            TensorFormat::kF8E4M3B128);
  EXPECT_EQ(glm->TrunkMatrix(family, "model.layers.0.mlp.gate_proj.weight"),
            TensorFormat::kF8E4M3B128);
  EXPECT_EQ(glm->TrunkMatrix(family, "model.embed_tokens.weight"), TensorFormat::kBF16);
}

// --trunk mixed: the embedding, the head, the dense MLPs, the indexers and
// the attention at 8 bits (an FP8 release's FP8 kept), every other matrix q4;
// norms and routers f32 whatever the choice.
TEST(TrunkChoiceTest, MixedKeepsTheSensitiveKindsAtEightBits) {
  auto mixed = TrunkChoice::Parse("mixed");
  WARP_ASSERT_OK(mixed);
  const std::vector<uint64_t> shape = {64, 64};
  EXPECT_EQ(mixed->FormatOf(TrunkKind::kEmbedding, TensorFormat::kBF16, shape),
            TensorFormat::kQ8B32);
  EXPECT_EQ(mixed->FormatOf(TrunkKind::kHead, TensorFormat::kF8E4M3B128, shape),
            TensorFormat::kF8E4M3B128);
  EXPECT_EQ(mixed->FormatOf(TrunkKind::kAttention, TensorFormat::kF8E4M3B128, shape),
            TensorFormat::kF8E4M3B128);
  EXPECT_EQ(mixed->FormatOf(TrunkKind::kLinearAttention, TensorFormat::kBF16, shape),
            TensorFormat::kQ4B32);
  EXPECT_EQ(mixed->FormatOf(TrunkKind::kLatentProjection, TensorFormat::kF8E4M3B128, shape),
            TensorFormat::kQ4B32);
  auto candidate = TrunkChoice::Parse("mixed:embedding");
  WARP_ASSERT_OK(candidate);
  EXPECT_EQ(candidate->FormatOf(TrunkKind::kHead, TensorFormat::kBF16, shape), TensorFormat::kQ4B32);
  EXPECT_EQ(mixed->FormatOf(TrunkKind::kSharedExperts, TensorFormat::kBF16, {64, 40}),
            TensorFormat::kBF16);  // rows that are not whole 32-blocks
  auto attention = TrunkChoice::Parse("q4:attention,head");
  WARP_ASSERT_OK(attention);
  EXPECT_EQ(attention->FormatOf(TrunkKind::kHead, TensorFormat::kBF16, shape), TensorFormat::kQ4B32);
  EXPECT_EQ(attention->FormatOf(TrunkKind::kDenseMlp, TensorFormat::kBF16, shape),
            TensorFormat::kBF16);
  EXPECT_THAT(TrunkChoice::Parse("q4:attention,mlp"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown kind \"mlp\"")));
  EXPECT_THAT(TrunkChoice::Parse("q3"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--trunk q3: expected native, bf16, q8, q4, mixed")));
}

// Every trunk tensor has its kind: the embedding and head by the plan, the
// mixers' and FFNs' matrices by what they are.
TEST(TrunkChoiceTest, TrunkTensorsSayTheirKind) {
  auto k3 = ParseModelConfig(
      "kimi_k3", ReadJson(warp::testing::SourceDir() / "tests/configs/kimi_k3.config.json"));
  WARP_ASSERT_OK(k3);
  std::map<TrunkKind, int> kinds;
  for (const TrunkTensor& tensor : TrunkTensors(*k3, TensorFormat::kBF16)) {
    if (tensor.kind == TrunkKind::kOther) {
      EXPECT_EQ(tensor.spec.format, TensorFormat::kF32) << tensor.spec.name;
    }
    if (tensor.spec.format != TensorFormat::kF32) ++kinds[tensor.kind];  // matrices
  }
  EXPECT_EQ(kinds[TrunkKind::kEmbedding], 1);
  EXPECT_EQ(kinds[TrunkKind::kHead], 1);
  EXPECT_GT(kinds[TrunkKind::kLinearAttention], 0);
  EXPECT_GT(kinds[TrunkKind::kAttention], 0);
  EXPECT_EQ(kinds[TrunkKind::kLatentProjection], 2 * 92);
  EXPECT_GT(kinds[TrunkKind::kSharedExperts], 0);
  EXPECT_EQ(kinds[TrunkKind::kDenseMlp], 3);  // the first layer's gate, up, down
}

TEST(ReleaseFormatsTest, ModulesMatchByWholeParts) {
  EXPECT_TRUE(ModuleMatches("model.layers.3.mlp.router", "router"));
  EXPECT_TRUE(ModuleMatches("model.layers.7.self_attn.q_proj", "model.layers.*.self_attn"));
  EXPECT_TRUE(ModuleMatches("model.layers.3.mlp.gate", "model.layers.3.mlp.gate"));
  EXPECT_FALSE(ModuleMatches("model.layers.3.mlp.gate_proj", "model.layers.3.mlp.gate"));
  EXPECT_FALSE(ModuleMatches("model.layers.13.self_attn.o_proj", "model.layers.1.self_attn"));
  // GLM-5.3 names its text modules from the text model's root; WARP's trunk
  // names (and the release's tensors) nest them under language_model.
  EXPECT_TRUE(ModuleMatches("model.language_model.layers.7.self_attn.q_proj",
                            "model.layers.*.self_attn"));
  EXPECT_FALSE(ModuleMatches("model.language_model.layers.7.mlp.gate_proj", "model.layers.7.self_attn"));
  EXPECT_FALSE(ModuleMatches("lm_head", "model.layers.*.self_attn"));
}

TEST(ReleaseFormatsTest, WhatWarpDoesNotConvertIsRefusedByName) {
  auto refused = [](json q, const std::string& want) {
    SCOPED_TRACE(q.dump());
    json config = {{"model_type", "deepseek_v3"}, {"quantization_config", std::move(q)}};
    EXPECT_THAT(ReadReleaseFormats(config, "release/config.json"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("release/config.json: " + want)));
  };
  refused({{"quant_method", "gptq"}, {"bits", 4}}, "quantization_config.quant_method \"gptq\"");
  refused({{"quant_method", "compressed-tensors"}, {"format", "nvfp4-pack-quantized"}},
          "quantization_config.format \"nvfp4-pack-quantized\"");
  refused({{"quant_method", "compressed-tensors"},
           {"config_groups", {{"group_0", {{"format", "pack-quantized"}}}}}},
          "quantization_config.config_groups.group_0.format \"pack-quantized\"");
  refused({{"quant_method", "fp8"}, {"weight_block_size", {64, 64}}},
          "quantization_config.weight_block_size [64,64]");
  refused({{"quant_method", "fp8"}, {"weight_block_size", {32, 128}}},
          "quantization_config.weight_block_size [32,128]");
  refused({{"quant_method", "fp8"}, {"fmt", "e5m2"}}, "quantization_config.fmt \"e5m2\"");
  refused({{"quant_method", "fp8"}, {"scale_fmt", "e4m3"}},
          "quantization_config.scale_fmt \"e4m3\"");
  refused({{"quant_method", "compressed-tensors"}}, "quantization_config.format null");
  refused({{"quant_method", "fp8"}, {"expert_dtype", "int4"}}, "expert_dtype \"int4\"");
  refused("fp8", "quantization_config \"fp8\": expected an object");
  // The plan names the config too.
  json config = ReadJson(warp::testing::SourceDir() / "tests/configs/kimi_k2.config.json");
  config["quantization_config"]["quant_method"] = "awq";
  EXPECT_THAT(PlanRelease(config, {}, "k2/config.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("k2/config.json: quantization_config.quant_method \"awq\"")));
  config["quantization_config"]["quant_method"] = "fp8";
  EXPECT_THAT(PlanRelease(config, {.experts = "q5"}, "k2/config.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--experts q5: expected native, bf16, q8, q4 or vq3r")));
}

// A config that says FP8 experts over a checkpoint of FP4 ones is refused at
// convert, naming the tensor; nothing is left behind as a container.
TEST(ReleaseFormatsTest, ConvertRefusesExpertsTheConfigContradicts) {
  warp::testing::TempDir dir;
  const std::filesystem::path fixture = warp::testing::FixtureDir("deepseek_v4_native");
  const std::filesystem::path copy = dir / "v4";
  std::filesystem::copy(fixture, copy);
  json config = ReadJson(copy / "config.json");
  config["expert_dtype"] = "fp8";
  std::ofstream(copy / "config.json") << config.dump(2);
  auto result = warp::testing::RunBinary(
      "computed", "convert --quiet " + copy.string() + " " + (dir / "m.warp").string());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("tensor layers."));
  EXPECT_THAT(result.output, HasSubstr("holds mxfp4_b32 experts, but config.json declares "
                                       "f8_e4m3_b128"));
  config["quantization_config"]["quant_method"] = "bitsandbytes";
  std::ofstream(copy / "config.json") << config.dump(2);
  result = warp::testing::RunBinary(
      "computed", "convert --quiet " + copy.string() + " " + (dir / "n.warp").string());
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("quantization_config.quant_method \"bitsandbytes\""));
}

}  // namespace
}  // namespace warp::computed
