#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "common/format/container.h"
#include "common/format/engram_table.h"
#include "common/io/file.h"
#include "common/kernels/matrix_view.h"
#include "common/numeric/half.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/trunk_choice.h"
#include "computed/synth/presets.h"
#include "computed/synth/synth_model.h"
#include "expertd/verify.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/stored_folds.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

void ExpectOpensAndVerifies(const std::filesystem::path& dir) {
  auto container = Container::Open(dir);
  WARP_ASSERT_OK(container);
  auto report = expertd::VerifyContainer(dir, {});
  WARP_ASSERT_OK(report);
  EXPECT_THAT(report->problems, ::testing::IsEmpty());
  uint64_t records = 0;
  for (const BankEntry& bank : (*container)->manifest().banks) records += bank.num_experts;
  EXPECT_EQ(report->records_checked, records);
  EXPECT_GT(records, 0u);
}

// The files on disk, not the writer's own counters: every bank file holds
// num_experts whole records of record_bytes (a multiple of 4 KiB, room for the
// 32-byte footer), trunk.bin is trunk_bytes and holds every trunk tensor, each
// engram table is its whole records, and the directory holds nothing else
// (but a tokenizer the manifest names). Returns the bytes of trunk.bin, the
// banks and the engram tables.
uint64_t ExpectFilesMatchTheManifest(const std::filesystem::path& dir, const Manifest& manifest) {
  namespace fs = std::filesystem;
  std::set<std::string> expected = {"manifest.json", std::string(kTrunkFile)};
  uint64_t total = fs::file_size(dir / kTrunkFile);
  EXPECT_EQ(fs::file_size(dir / kTrunkFile), manifest.trunk_bytes);
  EXPECT_EQ(manifest.trunk_bytes % 4096, 0u);
  for (const TensorEntry& tensor : manifest.trunk) {
    EXPECT_EQ(tensor.data.offset % 4096, 0u) << tensor.name;
    EXPECT_LE(tensor.data.offset + tensor.data.bytes, manifest.trunk_bytes) << tensor.name;
    if (tensor.scale) {
      EXPECT_LE(tensor.scale->offset + tensor.scale->bytes, manifest.trunk_bytes) << tensor.name;
    }
  }
  for (const BankEntry& bank : manifest.banks) {
    expected.insert(bank.file);
    EXPECT_EQ(bank.file, "experts-L" + std::to_string(bank.layer) + ".bin");
    const uint64_t size = fs::file_size(dir / bank.file);
    EXPECT_EQ(size, uint64_t{bank.num_experts} * bank.record_bytes) << bank.file;
    EXPECT_EQ(bank.record_bytes % 4096, 0u) << bank.file;
    EXPECT_LE(bank.payload_bytes + 32, bank.record_bytes) << bank.file;
    for (const TensorEntry& matrix : bank.matrices) {
      EXPECT_LE(matrix.data.offset + matrix.data.bytes, bank.payload_bytes) << matrix.name;
      EXPECT_EQ(matrix.data.bytes, DataBytes(matrix.format, matrix.shape)) << matrix.name;
    }
    total += size;
  }
  for (const EngramTableEntry& table : manifest.engram) {  // DeepSeek V4.1
    expected.insert(table.file);
    const uint64_t size = fs::file_size(dir / table.file);
    EXPECT_EQ(size, EngramRecords(table) * kEngramRecordBytes) << table.file;
    total += size;
  }
  if (manifest.tokenizer) {  // not counted: ContainerBytes is the weights'
    for (const std::string& file : manifest.tokenizer->files) expected.insert(file);
  }
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(dir)) found.insert(entry.path().filename());
  EXPECT_EQ(found, expected);
  return total;
}

struct PresetCase {
  std::string arch;
  std::string preset;
  std::optional<uint64_t> size;              // keeps the realistic shapes small enough for CI
  std::optional<TensorFormat> trunk_format;  // q4 trunk: a few hundred MB instead of ~1.3 GB
};

class SynthPresetTest : public ::testing::TestWithParam<PresetCase> {};

TEST_P(SynthPresetTest, WritesAContainerThatOpensAndVerifies) {
  const PresetCase& c = GetParam();
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(
      dir / "m.warp",
      {.arch = c.arch, .preset = c.preset, .target_bytes = c.size, .trunk_format = c.trunk_format});
  WARP_ASSERT_OK(result);
  ExpectOpensAndVerifies(dir / "m.warp");
  // Early routes' folds where the family has them, as convert writes them.
  ExpectStoredFoldsAreTheFoldsMadeAtLoad(dir / "m.warp");
  // The manifest the container holds is the one the writer returned.
  auto container = Container::Open(dir / "m.warp");
  WARP_ASSERT_OK(container);
  const Manifest& manifest = (*container)->manifest();
  EXPECT_EQ(manifest.trunk_bytes, result->manifest.trunk_bytes);
  ASSERT_EQ(manifest.banks.size(), result->manifest.banks.size());
  const uint64_t on_disk = ExpectFilesMatchTheManifest(dir / "m.warp", manifest);
  EXPECT_EQ(result->bytes_written, on_disk);
  // The size the planner of --size predicted is the size written.
  auto preset = FindPreset(c.arch, c.preset);
  WARP_ASSERT_OK(preset);
  auto predicted = ContainerBytes(c.arch, manifest.config, preset->expert_format,
                                  c.trunk_format.value_or(preset->trunk_format));
  WARP_ASSERT_OK(predicted);
  EXPECT_EQ(*predicted, on_disk);
  if (c.size) {
    EXPECT_LE(on_disk, *c.size);
  }
  auto model = ParseModelConfig(c.arch, manifest.config);
  WARP_ASSERT_OK(model);
  EXPECT_EQ(manifest.banks.size(), model->NumMoeLayers());
  for (const BankEntry& bank : manifest.banks) EXPECT_EQ(bank.num_experts, model->num_experts);
}

INSTANTIATE_TEST_SUITE_P(
    AllPresets, SynthPresetTest,
    ::testing::Values(
        PresetCase{"deepseek_v3", "tiny"}, PresetCase{"qwen3_moe", "tiny"},
        PresetCase{"deepseek_v3", "k2-slice", 600ull << 20, TensorFormat::kQ4B32},
        PresetCase{"qwen3_moe", "a3b-slice", 200ull << 20, TensorFormat::kQ4B32},
        PresetCase{"gpt_oss", "tiny"},
        PresetCase{"gpt_oss", "120b-slice", 400ull << 20, TensorFormat::kQ4B32},
        PresetCase{"kimi_linear", "tiny"},
        PresetCase{"kimi_linear", "kimi-linear-slice", 400ull << 20, TensorFormat::kQ4B32},
        PresetCase{"deepseek_v4", "tiny"},
        PresetCase{"deepseek_v4", "v4-flash-slice", 1500ull << 20, TensorFormat::kQ4B32},
        PresetCase{"deepseek_v41", "tiny"},
        PresetCase{"glm5_next", "tiny"},
        PresetCase{"glm5_next", "glm53-flash-slice", 1500ull << 20, TensorFormat::kQ4B32},
        PresetCase{"kimi_k3", "tiny"},
        PresetCase{"kimi_k3", "k3-slice", 1300ull << 20, TensorFormat::kQ4B32}),
    [](const auto& info) {
      std::string name = info.param.arch + "_" + info.param.preset;
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

// deepseek_v41/v41-flash-slice (56 GB, not scaled by --size) is tested by its
// config in synth_v41_test.cc and run by tests/bench/v41_engram.py.
TEST(SynthTest, EveryPresetIsTested) { EXPECT_EQ(AllPresets().size(), 16u); }

// --trunk mixed: the embedding and the head q8, every other matrix q4; the
// size --size plans is the size written, and the container opens and verifies.
TEST(SynthTest, AMixedTrunkStoresEachKindAsItsRuleSays) {
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(dir / "m.warp", {.arch = "kimi_k3",
                                                 .preset = "tiny",
                                                 .trunk_format = TensorFormat::kBF16,
                                                 .trunk_choice = "mixed"});
  WARP_ASSERT_OK(result);
  ExpectOpensAndVerifies(dir / "m.warp");
  ExpectStoredFoldsAreTheFoldsMadeAtLoad(dir / "m.warp");
  const Manifest& manifest = result->manifest;
  std::map<std::string, TensorFormat> formats;
  for (const TensorEntry& tensor : manifest.trunk) formats[tensor.name] = tensor.format;
  auto model = ParseModelConfig("kimi_k3", manifest.config);
  WARP_ASSERT_OK(model);
  const ModelPlan plan = PlanOf(*model);
  EXPECT_EQ(formats.at(plan.embed), TensorFormat::kQ8B32);
  EXPECT_EQ(formats.at(plan.head), TensorFormat::kQ8B32);
  int q4 = 0;
  for (const auto& [name, format] : formats) q4 += format == TensorFormat::kQ4B32;
  EXPECT_GT(q4, 10);
  auto choice = TrunkChoice::Parse("mixed");
  WARP_ASSERT_OK(choice);
  auto predicted = ContainerBytes("kimi_k3", manifest.config, TensorFormat::kMxfp4B32,
                                  [&](const TrunkTensor& tensor) {
                                    return choice->FormatOf(tensor.kind, TensorFormat::kBF16,
                                                            tensor.spec.shape);
                                  });
  WARP_ASSERT_OK(predicted);
  EXPECT_EQ(*predicted, result->bytes_written);
}

// Presets written as C++ literals hold signed integers (Kimi's layer lists).
TEST(SynthTest, EveryPresetConfigParsesAsWritten) {
  for (const Preset& preset : AllPresets()) {
    WARP_EXPECT_OK(ParseModelConfig(preset.arch, preset.config).status())
        << preset.arch << "/" << preset.name;
  }
}

TEST(SynthTest, SameSeedGivesSameBytesOtherSeedDiffers) {
  warp::testing::TempDir dir;
  for (const char* name : {"a.warp", "b.warp"}) {
    WARP_ASSERT_OK(SynthesizeModel(dir / name, {.seed = 5}));
  }
  WARP_ASSERT_OK(SynthesizeModel(dir / "c.warp", {.seed = 6}));
  auto read = [&](const char* name, const char* file) {
    auto bytes = ReadFileToString(dir / name / file);
    EXPECT_TRUE(bytes.ok());
    return bytes.value_or("");
  };
  EXPECT_EQ(read("a.warp", "experts-L1.bin"), read("b.warp", "experts-L1.bin"));
  EXPECT_EQ(read("a.warp", "trunk.bin"), read("b.warp", "trunk.bin"));
  EXPECT_EQ(read("a.warp", "manifest.json"), read("b.warp", "manifest.json"));
  EXPECT_NE(read("a.warp", "experts-L1.bin"), read("c.warp", "experts-L1.bin"));
  EXPECT_NE(read("a.warp", "manifest.json"), read("c.warp", "manifest.json"));
}

TEST(SynthTest, SizeScalesLayersThenExpertsToFitTheTarget) {
  auto preset = FindPreset("deepseek_v3", "k2-slice");
  WARP_ASSERT_OK(preset);
  const uint64_t target = 30ull << 30;
  auto scaled =
      ScaleToSize("deepseek_v3", preset->config, TensorFormat::kQ4B32, TensorFormat::kBF16, target);
  WARP_ASSERT_OK(scaled);
  EXPECT_EQ((*scaled)["n_routed_experts"], 384);  // keeps the real expert count
  auto bytes = ContainerBytes("deepseek_v3", *scaled, TensorFormat::kQ4B32, TensorFormat::kBF16);
  WARP_ASSERT_OK(bytes);
  EXPECT_LE(*bytes, target);
  auto bigger = *scaled;
  bigger["num_hidden_layers"] = (*scaled)["num_hidden_layers"].get<uint32_t>() + 1;
  auto bigger_bytes =
      ContainerBytes("deepseek_v3", bigger, TensorFormat::kQ4B32, TensorFormat::kBF16);
  WARP_ASSERT_OK(bigger_bytes);
  EXPECT_GT(*bigger_bytes, target);
}

TEST(SynthTest, SizeBelowTheSmallestModelIsRefusedWithTheMinimum) {
  warp::testing::TempDir dir;
  EXPECT_THAT(SynthesizeModel(dir / "m.warp", {.preset = "tiny", .target_bytes = 1000}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is below the smallest deepseek_v3 model of this preset")));
}

TEST(SynthTest, FormatsThatComeFromAConverterAreRefusedByName) {
  warp::testing::TempDir dir;
  EXPECT_THAT(
      SynthesizeModel(dir / "a.warp", {.preset = "tiny", .expert_format = TensorFormat::kVq3rB32}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("vq3r_b32"), HasSubstr("--experts vq3r"))));
  EXPECT_THAT(
      SynthesizeModel(dir / "b.warp", {.preset = "tiny", .trunk_format = TensorFormat::kGgmlQ4_0}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("ggml_q4_0"), HasSubstr("GGUF"))));
}

TEST(SynthTest, UnknownPresetNamesTheKnownOnes) {
  warp::testing::TempDir dir;
  EXPECT_THAT(SynthesizeModel(dir / "m.warp", {.preset = "huge"}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("deepseek_v3/k2-slice")));
}

TEST(SynthTest, RefusesToOverwriteAContainer) {
  warp::testing::TempDir dir;
  WARP_ASSERT_OK(SynthesizeModel(dir / "m.warp", {}));
  EXPECT_THAT(SynthesizeModel(dir / "m.warp", {}),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("m.warp")));
}

// DESIGN.md#testing: synthetic weights must be zero-centred, or every token
// routes to the same experts and caches look far better than they are.
TEST(SynthTest, Q4CodesAreZeroCentred) {
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(dir / "m.warp", {.expert_format = TensorFormat::kQ4B32});
  WARP_ASSERT_OK(result);
  const BankEntry& bank = result->manifest.banks.front();
  auto bytes = ReadFileToString(dir / "m.warp" / bank.file);
  WARP_ASSERT_OK(bytes);
  double sum = 0;
  double sum_sq = 0;
  uint64_t n = 0;
  for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
    for (const TensorEntry& matrix : bank.matrices) {
      const uint64_t base = expert * bank.record_bytes + matrix.data.offset;
      for (uint64_t i = 0; i < matrix.data.bytes; ++i) {
        const uint8_t b = static_cast<uint8_t>((*bytes)[base + i]);
        for (int v : {(b & 15) - 8, (b >> 4) - 8}) {
          ASSERT_NE(v, -8) << "q4 code -8 breaks the symmetry";
          sum += v;
          sum_sq += v * v;
          ++n;
        }
      }
    }
  }
  EXPECT_NEAR(sum / n, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sum_sq / n), 4.18, 0.1);
}

// Mean and RMS of every expert weight of a synthesized model, as DequantizeRow reads them.
std::pair<double, double> ExpertWeightMoments(TensorFormat format) {
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(dir / "m.warp", {.expert_format = format});
  EXPECT_TRUE(result.ok());
  const BankEntry& bank = result->manifest.banks.front();
  auto bytes = ReadFileToString(dir / "m.warp" / bank.file);
  EXPECT_TRUE(bytes.ok());
  const auto* record_bytes = reinterpret_cast<const std::byte*>(bytes->data());
  double sum = 0, sum_sq = 0;
  uint64_t n = 0;
  for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
    const std::byte* record = record_bytes + expert * bank.record_bytes;
    for (const TensorEntry& matrix : bank.matrices) {
      const kernels::MatrixView view{.format = matrix.format,
                                     .rows = matrix.shape[0],
                                     .cols = matrix.shape[1],
                                     .data = record + matrix.data.offset,
                                     .scale = record + matrix.scale->offset};
      std::vector<float> row(view.cols);
      for (uint64_t r = 0; r < view.rows; ++r) {
        kernels::DequantizeRow(view, r, row);
        for (float v : row) {
          sum += v;
          sum_sq += double{v} * v;
        }
        n += view.cols;
      }
    }
  }
  return {sum / n, std::sqrt(sum_sq / n)};
}

// mxfp4 scales are powers of two: the fill still gives zero-centred weights
// with the spread q4's free f16 scales give.
TEST(SynthTest, Mxfp4WeightsAreZeroCentredWithTheSpreadOfQ4) {
  const auto [q4_mean, q4_rms] = ExpertWeightMoments(TensorFormat::kQ4B32);
  const auto [mean, rms] = ExpertWeightMoments(TensorFormat::kMxfp4B32);
  EXPECT_NEAR(mean, 0.0, 0.02 * rms);
  EXPECT_NEAR(rms, q4_rms, 0.05 * q4_rms);
  EXPECT_NEAR(q4_mean, 0.0, 0.02 * q4_rms);
}

// The router of a synthetic model spreads tokens over experts: for random
// unit-scale hidden states, the top-k picks cover most experts.
TEST(SynthTest, RouterSpreadsRandomTokensOverExperts) {
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(dir / "m.warp", {.arch = "qwen3_moe", .preset = "tiny"});
  WARP_ASSERT_OK(result);
  const TensorEntry* router = result->manifest.FindTrunkTensor("model.layers.1.mlp.gate.weight");
  ASSERT_NE(router, nullptr);
  ASSERT_EQ(router->format, TensorFormat::kF32);
  auto trunk = ReadFileToString(dir / "m.warp" / "trunk.bin");
  WARP_ASSERT_OK(trunk);
  const uint64_t experts = router->shape[0];
  const uint64_t hidden = router->shape[1];
  std::vector<float> weights(experts * hidden);
  std::memcpy(weights.data(), trunk->data() + router->data.offset, router->data.bytes);
  std::set<uint64_t> chosen;
  uint64_t state = 42;
  for (int token = 0; token < 32; ++token) {
    std::vector<float> x(hidden);
    for (float& v : x) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = static_cast<float>(static_cast<int64_t>(state >> 33) % 2001 - 1000) / 577.0f;
    }
    std::vector<std::pair<float, uint64_t>> logits;
    for (uint64_t e = 0; e < experts; ++e) {
      float dot = 0;
      for (uint64_t i = 0; i < hidden; ++i) dot += weights[e * hidden + i] * x[i];
      logits.push_back({dot, e});
    }
    std::partial_sort(logits.begin(), logits.begin() + 4, logits.end(), std::greater<>());
    for (int k = 0; k < 4; ++k) chosen.insert(logits[k].second);
  }
  EXPECT_GE(chosen.size(), experts * 3 / 4);
}

// A synthetic model must route like random weights at every depth (DESIGN.md,
// "Synthetic models must route like trained ones"): over 32 random tokens each
// MoE layer uses, on average over three prompts, at least 90% of the distinct
// experts that uniform random top-k routing would, E (1 - (1 - k/E)^32). Run
// through the whole model, so a stream that every token shares (a bias on
// every layer, attention's average over positions) shows as routing that
// concentrates with depth: gpt-oss/tiny used 2 of 8 experts past layer 0,
// qwen3_moe/tiny 12 of 16 by layer 3, before synth's fills were mended.
class SynthRoutingTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SynthRoutingTest, EveryLayerRoutesLikeUniformRandomRouting) {
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(dir / "m.warp", {.arch = GetParam(), .preset = "tiny"});
  WARP_ASSERT_OK(result);
  const uint32_t experts = result->manifest.banks.at(0).num_experts;
  auto model = ParseModelConfig(GetParam(), result->manifest.config);
  WARP_ASSERT_OK(model);
  const uint32_t top_k = model->experts_per_token;
  constexpr int kTokens = 32, kPrompts = 3;
  std::map<uint32_t, double> distinct;  // layer -> summed over the prompts
  std::mt19937 rng(2026);
  for (int prompt = 0; prompt < kPrompts; ++prompt) {
    std::string ids;
    for (int t = 0; t < kTokens; ++t) {
      ids += (t ? "," : "") + std::to_string(5 + rng() % (model->vocab_size - 5));
    }
    const auto trace = dir / "trace.txt";
    auto run = warp::testing::RunBinary("computed", "--log-level warn run --ids " +
                                                        (dir / "m.warp").string() + " " + ids +
                                                        " -n 1 --trace " + trace.string());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    std::ifstream in(trace);
    std::map<uint32_t, std::set<uint32_t>> used;
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      uint32_t position, layer;
      std::string list;
      fields >> position >> layer >> list;
      std::istringstream chosen(list);
      for (std::string e; std::getline(chosen, e, ',');) used[layer].insert(std::stoul(e));
    }
    ASSERT_FALSE(used.empty()) << "no routing in " << trace;
    for (const auto& [layer, set] : used) distinct[layer] += set.size();
  }
  const double uniform = experts * (1 - std::pow(1 - double(top_k) / experts, kTokens));
  for (const auto& [layer, sum] : distinct) {
    EXPECT_GE(sum / kPrompts, 0.9 * uniform)
        << GetParam() << " layer " << layer << ": " << sum / kPrompts << " distinct experts of "
        << experts << " (top-" << top_k << "), uniform routing " << uniform;
  }
}

INSTANTIATE_TEST_SUITE_P(TinyPresets, SynthRoutingTest,
                         ::testing::Values("deepseek_v3", "qwen3_moe", "gpt_oss", "kimi_linear",
                                           "deepseek_v4", "deepseek_v41", "glm5_next",
                                           "kimi_k3"));

// A hash layer's table names top-k distinct experts for every token, as the
// reference fixtures' randperm(E)[:k] and top-k routing do (a repeated id made
// --learn write a usage file it refused to read back), and spreads the
// vocabulary over all the experts.
TEST(SynthTest, HashTablesNameDistinctExpertsForEveryToken) {
  warp::testing::TempDir dir;
  auto result = SynthesizeModel(dir / "m.warp", {.arch = "deepseek_v4", .preset = "tiny"});
  WARP_ASSERT_OK(result);
  auto model = ParseModelConfig("deepseek_v4", result->manifest.config);
  WARP_ASSERT_OK(model);
  auto trunk = ReadFileToString(dir / "m.warp" / "trunk.bin");
  WARP_ASSERT_OK(trunk);
  int tables = 0;
  for (const TensorEntry& tensor : result->manifest.trunk) {
    if (!tensor.name.ends_with(".tid2eid")) continue;
    ++tables;
    ASSERT_EQ(tensor.format, TensorFormat::kF32);
    ASSERT_EQ(tensor.shape[1], model->experts_per_token);
    std::vector<float> ids(tensor.shape[0] * tensor.shape[1]);
    std::memcpy(ids.data(), trunk->data() + tensor.data.offset, tensor.data.bytes);
    std::set<float> used;
    for (uint64_t token = 0; token < tensor.shape[0]; ++token) {
      std::set<float> row(ids.begin() + token * tensor.shape[1],
                          ids.begin() + (token + 1) * tensor.shape[1]);
      EXPECT_EQ(row.size(), tensor.shape[1]) << tensor.name << " token " << token;
      for (float id : row) {
        EXPECT_EQ(id, std::floor(id));
        EXPECT_LT(id, model->num_experts);
      }
      used.insert(row.begin(), row.end());
    }
    EXPECT_EQ(used.size(), model->num_experts) << tensor.name;
    EXPECT_GE(*used.begin(), 0.0f);
  }
  EXPECT_EQ(tables, 2);  // the tiny preset's num_hash_layers
}

}  // namespace
}  // namespace warp::computed
