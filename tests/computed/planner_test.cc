#include "computed/planner/planner.h"

#include <fstream>

#include "common/format/container.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"
#include "computed/synth/presets.h"
#include "computed/synth/synth_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;
constexpr uint64_t kGiB = 1024 * kMiB;

// The deepseek_v3 "tiny" preset, by hand (f32 trunk, bf16 experts, every
// trunk tensor padded to 4 KiB pages):
//   embed_tokens [256, 64] f32                         = 65536
//   layer 0 (dense):
//     input_layernorm [64] -> 1 page                   =  4096
//     q_a_proj [32, 64] = 8192, q_a_layernorm 4096, q_b_proj [4*24, 32] = 12288
//     kv_a_proj_with_mqa [40, 64] = 10240 -> 12288, kv_a_layernorm 4096,
//     kv_b_proj [4*32, 32] = 16384, o_proj [64, 64] = 16384
//     post_attention_layernorm 4096                    -> attention block 81920
//     mlp gate/up [128, 64], down [64, 128]: 3 x 32768 = 98304  -> 180224
//   layers 1-3 (MoE): attention 81920 + router [16, 64] 4096 + bias [16] 4096
//     + shared expert gate/up [32, 64], down [64, 32]: 3 x 8192 = 114688 each
//   norm 4096 + lm_head [256, 64] 65536
//   early routes' folds [16, 64] f32 = 4096 per MoE layer = 12288
//   trunk = 65536 + 180224 + 3 * 114688 + 4096 + 65536 + 12288 = 671744
// One record: gate, up [32, 64] and down [64, 32] bf16, 4096 bytes each,
// payload 12288 + 32-byte footer -> 16384 bytes.
// KV per token: (kv_lora_rank 32 + qk_rope_head_dim 8) x 4 B x 4 layers = 640.
constexpr uint64_t kTinyTrunk = 671744;
constexpr uint64_t kTinyRecord = 16384;
constexpr uint64_t kTinyKvPerToken = 640;
constexpr uint64_t kTinyWorkingSet = 4 * 3 * kTinyRecord;  // top-4 x 3 MoE layers
constexpr uint64_t kTinyBanks = 16 * 3 * kTinyRecord;      // 16 experts x 3 layers
constexpr uint64_t kTinyFloorCache = 2 * 4 * kTinyRecord;  // two MoE layers' top-4
// Early routes' folds: 16 experts x o_proj's 4 heads x v_head_dim 16 x 4 B, per MoE layer.
constexpr uint64_t kTinyFolds = 3 * 16 * 4 * 16 * 4;

class PlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto result = SynthesizeModel(dir_ / "tiny.warp", {.arch = "deepseek_v3", .preset = "tiny"});
    WARP_ASSERT_OK(result);
    manifest_ = result->manifest;
  }

  warp::testing::TempDir dir_;
  Manifest manifest_;
};

TEST_F(PlannerTest, TinyFiguresMatchHandArithmetic) {
  auto plan = ComputePlan(manifest_, /*context_tokens=*/1000);
  WARP_ASSERT_OK(plan);
  EXPECT_EQ(plan->trunk_bytes, kTinyTrunk);
  EXPECT_EQ(plan->kv_bytes_per_token, kTinyKvPerToken);
  EXPECT_EQ(plan->kv_bytes, 1000 * kTinyKvPerToken);
  EXPECT_EQ(plan->experts_per_token, 4u);
  EXPECT_EQ(plan->num_moe_layers, 3u);
  EXPECT_EQ(plan->num_records, 48u);
  EXPECT_EQ(plan->working_set_bytes, kTinyWorkingSet);
  EXPECT_EQ(plan->bank_bytes, kTinyBanks);
  EXPECT_EQ(plan->fold_bytes, 0u);  // synth wrote the folds into the trunk
  EXPECT_EQ(plan->layer_records_bytes, 4 * kTinyRecord);
  EXPECT_EQ(plan->floor_cache_bytes, kTinyFloorCache);
  EXPECT_EQ(plan->floor_bytes, kTinyTrunk + 640000 + kTinyFloorCache);
  EXPECT_EQ(plan->resident_bytes, kTinyTrunk + 640000 + kTinyBanks);
  // trunk + kv + 4 working sets (768 KiB of records) is all the banks: resident.
  EXPECT_EQ(plan->recommended_bytes, plan->resident_bytes);
}

// With early routes folded at load (--early-route on a container without
// folds) the folded routers stay beside the trunk: the floor, resident and
// budget figures count them, and the cache gets less.
TEST_F(PlannerTest, EarlyRoutesFoldsCountBesideTheTrunk) {
  Manifest unfolded = manifest_;
  std::erase_if(unfolded.trunk,
                [](const TensorEntry& tensor) { return tensor.name.ends_with(".o_proj_fold"); });
  ASSERT_EQ(unfolded.trunk.size() + 3, manifest_.trunk.size());
  unfolded.trunk_bytes -= kTinyFolds;
  auto plan = ComputePlan(unfolded, 1000, "manifest.json", 1, /*fold_early_routes=*/true);
  WARP_ASSERT_OK(plan);
  const uint64_t trunk = kTinyTrunk - kTinyFolds;
  EXPECT_EQ(plan->trunk_bytes, trunk);
  EXPECT_EQ(plan->fold_bytes, kTinyFolds);
  EXPECT_EQ(plan->floor_bytes, trunk + kTinyFolds + 640000 + kTinyFloorCache);
  EXPECT_EQ(plan->resident_bytes, trunk + kTinyFolds + 640000 + kTinyBanks);
  EXPECT_EQ(plan->fixed_bytes(), trunk + kTinyFolds + 640000);
  // The folds synth wrote are trunk: none to make.
  auto stored = ComputePlan(manifest_, 1000, "manifest.json", 1, /*fold_early_routes=*/true);
  WARP_ASSERT_OK(stored);
  EXPECT_EQ(stored->fold_bytes, 0u);

  // A fold the converter wrote is trunk, folded no more; one of another shape
  // is refused, named.
  auto config = ParseModelConfig(manifest_.architecture, manifest_.config);
  WARP_ASSERT_OK(config);
  const std::vector<TensorSpec> folds = EarlyRouteFoldSpecs(*config);
  ASSERT_FALSE(folds.empty());
  Manifest with_fold = unfolded;
  with_fold.trunk.push_back(
      {.name = folds[0].name, .format = TensorFormat::kF32, .shape = folds[0].shape});
  auto folded = ComputePlan(with_fold, 1000, "manifest.json", 1, /*fold_early_routes=*/true);
  WARP_ASSERT_OK(folded);
  EXPECT_EQ(folded->fold_bytes, kTinyFolds - DataBytes(TensorFormat::kF32, folds[0].shape));
  with_fold.trunk.back().shape[1] += 1;
  EXPECT_THAT(ComputePlan(with_fold, 1000, "manifest.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("trunk tensor " + folds[0].name + " is f32")));
}

// serve --parallel N: each sequence holds a whole context's state; the
// floor, resident and budget figures count all of them, the working set once.
TEST_F(PlannerTest, ParallelSequencesEachHoldTheirState) {
  auto plan = ComputePlan(manifest_, 1000, "manifest.json", /*sequences=*/4);
  WARP_ASSERT_OK(plan);
  EXPECT_EQ(plan->sequences, 4u);
  EXPECT_EQ(plan->kv_bytes_per_token, kTinyKvPerToken);
  EXPECT_EQ(plan->kv_bytes, 4 * 1000 * kTinyKvPerToken);
  EXPECT_EQ(plan->floor_bytes, kTinyTrunk + 4 * 640000 + kTinyFloorCache);
  EXPECT_THAT(ComputePlan(manifest_, 1000, "manifest.json", 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 sequences")));
  EXPECT_THAT(ComputePlan(manifest_, 1000, "manifest.json", 65),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not in [1, 64]")));
}

TEST_F(PlannerTest, TrunkFigureEqualsTrunkFileSize) {
  auto plan = ComputePlan(manifest_, 1);
  WARP_ASSERT_OK(plan);
  EXPECT_EQ(plan->trunk_bytes, std::filesystem::file_size(dir_ / "tiny.warp" / "trunk.bin"));
}

TEST_F(PlannerTest, QwenKvIsKeysAndValuesOfKvHeads) {
  auto result = SynthesizeModel(dir_ / "q.warp", {.arch = "qwen3_moe", .preset = "tiny"});
  WARP_ASSERT_OK(result);
  auto plan = ComputePlan(result->manifest, 10);
  WARP_ASSERT_OK(plan);
  // 2 (K and V) x 2 kv heads x head_dim 16 x 4 B x 4 layers.
  EXPECT_EQ(plan->kv_bytes_per_token, 2u * 2 * 16 * 4 * 4);
  EXPECT_EQ(plan->num_moe_layers, 4u);
}

// --context 2^60 once planned a KV of 0 B, and -1 was taken as 2^64-1.
TEST_F(PlannerTest, ContextOutsideTheBoundIsRefused) {
  EXPECT_THAT(ComputePlan(manifest_, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("context of 0 tokens")));
  EXPECT_THAT(ComputePlan(manifest_, uint64_t{1} << 60),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not in [1, 16777216]")));
  WARP_EXPECT_OK(ComputePlan(manifest_, 4097));  // past the positions trained: a warning at Open
}

// Sizes from a manifest are summed and multiplied without wrapping.
TEST_F(PlannerTest, SizesThatOverflowAreRefusedNotWrapped) {
  Manifest huge = manifest_;
  huge.trunk_bytes = UINT64_MAX - 1000;
  EXPECT_THAT(ComputePlan(huge, 1000, "m.warp/manifest.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m.warp/manifest.json: the floor bytes overflow 64 bits")));
  huge = manifest_;
  huge.banks[0].record_bytes = uint64_t{1} << 62;
  EXPECT_THAT(ComputePlan(huge, 1000),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflow 64 bits")));
}

// Config errors of a container name its manifest, not a config.json.
TEST_F(PlannerTest, ConfigErrorsNameTheManifestField) {
  Manifest bad = manifest_;
  bad.config["rope_theta"] = 0;
  EXPECT_THAT(ComputePlan(bad, 10, "m.warp/manifest.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("m.warp/manifest.json: config.rope_theta: 0 is not in (0, ")));
}

// A config cut to fewer layers than the container holds is refused, not run truncated.
TEST_F(PlannerTest, ManifestLayersBeyondTheConfigAreRefused) {
  Manifest cut = manifest_;
  cut.config["num_hidden_layers"] = 3;
  EXPECT_THAT(ComputePlan(cut, 10, "m.warp/manifest.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("m.warp/manifest.json: bank of layer 3 is beyond "
                                 "config.num_hidden_layers 3")));
  Manifest stray = manifest_;
  stray.banks.pop_back();
  stray.config["num_hidden_layers"] = 3;
  EXPECT_THAT(ComputePlan(stray, 10), StatusIs(absl::StatusCode::kFailedPrecondition,
                                               HasSubstr("trunk tensor model.layers.3.")));
}

// A bank on a layer the config makes dense, and a width past WARP's bound, are refused.
TEST_F(PlannerTest, ABankOnADenseLayerAndAnOversizedWidthAreRefused) {
  Manifest dense = manifest_;
  dense.banks.front().layer = 0;  // first_k_dense_replace: layer 0 is a dense MLP
  EXPECT_THAT(ComputePlan(dense, 10, "m.warp/manifest.json"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("bank of layer 0, which the config makes a dense layer")));
  Manifest wide = manifest_;
  wide.config["kv_lora_rank"] = 1 << 21;
  EXPECT_THAT(ComputePlan(wide, 10, "m.warp/manifest.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("config.kv_lora_rank: 2097152 is above WARP's bound of 1048576")));
}

PlanFigures FakePlan() {
  return PlanFigures{.trunk_bytes = 1 * kGiB,
                     .context_tokens = 100,
                     .kv_bytes = 1 * kMiB,
                     .working_set_bytes = 100 * kMiB,
                     .bank_bytes = 10 * kGiB,
                     .floor_bytes = 1 * kGiB + 1 * kMiB + 100 * kMiB,
                     .resident_bytes = 11 * kGiB + 1 * kMiB};
}

MemoryLimits Available(uint64_t bytes) {
  return MemoryLimits{.mem_total_bytes = 64 * kGiB, .mem_available_bytes = bytes};
}

// A machine with `available` bytes free, inside /sys/fs/cgroup/app with `limit` and `usage`.
MemoryLimits InCgroup(uint64_t available, uint64_t limit, uint64_t usage) {
  MemoryLimits limits = Available(available);
  limits.cgroup_limit_bytes = limit;
  limits.cgroup_usage_bytes = usage;
  limits.cgroup_source = "/sys/fs/cgroup/app/memory.max";
  return limits;
}

TEST(ResolveBudgetTest, RequestedBelowFloorIsRefusedWithTheFigureNeeded) {
  auto decision = ResolveBudget(FakePlan(), 1 * kGiB, Available(32 * kGiB));
  EXPECT_THAT(decision, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("needs at least 1.10 GiB")));
  EXPECT_THAT(decision, StatusIs(absl::StatusCode::kFailedPrecondition,
                                 HasSubstr("budget 1.00 GiB is below the floor")));
}

// With early routes their folds are named in a refused budget's floor and taken
// from the cache of an accepted one.
TEST(ResolveBudgetTest, EarlyRoutesFoldsAreNamedInTheFloorAndLeaveTheCache) {
  PlanFigures plan = FakePlan();
  plan.fold_bytes = 16 * kMiB;
  plan.floor_bytes += plan.fold_bytes;
  EXPECT_THAT(
      ResolveBudget(plan, 1 * kGiB, Available(32 * kGiB)),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("+ early routes 16.00 MiB")));
  auto decision = ResolveBudget(plan, 2 * kGiB, Available(32 * kGiB));
  WARP_ASSERT_OK(decision);
  EXPECT_EQ(decision->cache_bytes, 2 * kGiB - plan.fixed_bytes());
  EXPECT_EQ(decision->cache_bytes,
            ResolveBudget(FakePlan(), 2 * kGiB, Available(32 * kGiB))->cache_bytes - 16 * kMiB);
}

// --budget 1000T on a 64 GiB machine, or above the cgroup's limit, cannot be kept.
TEST(ResolveBudgetTest, RequestedAboveTheMemoryThatBindsIsRefused) {
  EXPECT_THAT(ResolveBudget(FakePlan(), 1000 * 1024 * kGiB, Available(32 * kGiB)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("budget 1000.00 TiB is above the 64.00 GiB of this machine")));
  EXPECT_THAT(ResolveBudget(FakePlan(), 20 * kGiB, InCgroup(32 * kGiB, 16 * kGiB, 0)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("above the 16.00 GiB of the cgroup limit in "
                                 "/sys/fs/cgroup/app/memory.max")));
}

TEST(ResolveBudgetTest, RequestedBudgetIsTakenAsIs) {
  auto decision = ResolveBudget(FakePlan(), 2 * kGiB, Available(1 * kGiB));
  WARP_ASSERT_OK(decision);
  EXPECT_EQ(decision->budget_bytes, 2 * kGiB);
  EXPECT_EQ(decision->cache_bytes, 2 * kGiB - 1 * kGiB - 1 * kMiB);
}

// Off a cgroup the cache takes all of 3/4 of what is available, not whole
// working sets: on the seeds' machines one working set does not fit.
TEST(ResolveBudgetTest, DefaultTakesThreeQuartersOfAvailable) {
  const PlanFigures plan = FakePlan();
  // 3/4 of 2 GiB = 1536 MiB; floor is 1125 MiB.
  auto decision = ResolveBudget(plan, std::nullopt, Available(2 * kGiB));
  WARP_ASSERT_OK(decision);
  EXPECT_EQ(decision->budget_bytes, 1536 * kMiB);
  EXPECT_EQ(decision->cache_bytes, 1536 * kMiB - plan.fixed_bytes());
  EXPECT_THAT(decision->rule, HasSubstr("3/4 of 2.00 GiB available"));
  EXPECT_THAT(decision->rule, HasSubstr("MemAvailable"));
  // Less than one working set above the floor: all of it still.
  auto tight = ResolveBudget(plan, std::nullopt, Available(1500 * kMiB));
  WARP_ASSERT_OK(tight);
  EXPECT_EQ(tight->budget_bytes, 1125 * kMiB);
}

TEST(ResolveBudgetTest, DefaultIsCappedAtFullyResident) {
  const PlanFigures plan = FakePlan();
  auto decision = ResolveBudget(plan, std::nullopt, Available(100 * kGiB));
  WARP_ASSERT_OK(decision);
  EXPECT_EQ(decision->budget_bytes, plan.resident_bytes);
  EXPECT_EQ(decision->cache_bytes, plan.bank_bytes);
  EXPECT_THAT(decision->rule, HasSubstr("fully resident"));
}

TEST(ResolveBudgetTest, DefaultBelowFloorIsRefused) {
  auto decision = ResolveBudget(FakePlan(), std::nullopt, Available(1 * kGiB));
  EXPECT_THAT(decision,
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("not enough memory: this model needs at least 1.10 GiB")));
}

// Inside a cgroup whose room binds, the experts' O_DIRECT reads need no page
// cache: the default takes the room less the margin and the read buffers, not
// 3/4 of it in whole working sets.
TEST(ResolveBudgetTest, InsideACgroupTheDefaultTakesTheRoomLessTheMargin) {
  MemoryLimits limits = InCgroup(32 * kGiB, 3 * kGiB, 1 * kGiB);
  PlanFigures plan = FakePlan();
  plan.max_record_bytes = 24 * kMiB;
  auto decision = ResolveBudget(plan, std::nullopt, limits, /*reads_in_flight=*/4);
  WARP_ASSERT_OK(decision);
  // Room 2 GiB - 256 MiB - 4 x 24 MiB = 1696 MiB (3/4 would have been 1536 MiB, in whole
  // working sets 1525 MiB).
  EXPECT_EQ(decision->budget_bytes, 2 * kGiB - kCgroupMarginBytes - 4 * 24 * kMiB);
  EXPECT_EQ(decision->cache_bytes, decision->budget_bytes - plan.trunk_bytes - plan.kv_bytes);
  EXPECT_THAT(decision->rule, HasSubstr("cgroup limit in /sys/fs/cgroup/app/memory.max"));
  EXPECT_THAT(decision->rule, HasSubstr("4 read buffers"));
  // More reads in flight, more buffers outside the cache.
  auto eight = ResolveBudget(plan, std::nullopt, limits, 8);
  WARP_ASSERT_OK(eight);
  EXPECT_EQ(eight->budget_bytes, decision->budget_bytes - 4 * 24 * kMiB);
  // A room above what the model needs leaves it fully resident.
  limits.cgroup_limit_bytes = 20 * kGiB;
  auto resident = ResolveBudget(plan, std::nullopt, limits);
  WARP_ASSERT_OK(resident);
  EXPECT_EQ(resident->budget_bytes, plan.resident_bytes);
  EXPECT_THAT(resident->rule, HasSubstr("fully resident"));
}

// Where the machine's MemAvailable is tighter than the cgroup's room, the page
// cache matters again: 3/4 of it.
TEST(ResolveBudgetTest, MachineMemoryTighterThanTheCgroupKeepsThreeQuarters) {
  const PlanFigures plan = FakePlan();
  auto decision = ResolveBudget(plan, std::nullopt, InCgroup(2 * kGiB, 16 * kGiB, 0));
  WARP_ASSERT_OK(decision);
  EXPECT_EQ(decision->budget_bytes, 1536 * kMiB);
  EXPECT_THAT(decision->rule, HasSubstr("3/4 of 2.00 GiB available"));
}

TEST(ResolveBudgetTest, CgroupRoomBelowFloorAndMarginIsRefused) {
  // 1280 - 256 = 1024 MiB < the 1125 MiB floor.
  EXPECT_THAT(ResolveBudget(FakePlan(), std::nullopt, InCgroup(32 * kGiB, 1280 * kMiB, 0)),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("room under the cgroup limit in /sys/fs/cgroup/app/memory.max "
                                 "less 256.00 MiB")));
}

void WriteFile(const std::filesystem::path& path, const std::string& contents) {
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << contents;
}

TEST(ResolveBudgetTest, FakeCgroupV2TreeLimitsTheDefault) {
  warp::testing::TempDir root;
  WriteFile(root / "proc/meminfo", "MemTotal:       25165824 kB\nMemAvailable:   20971520 kB\n");
  WriteFile(root / "proc/self/cgroup", "0::/warp.slice/run.scope\n");
  WriteFile(root / "sys/fs/cgroup/warp.slice/run.scope/memory.max", "max\n");
  WriteFile(root / "sys/fs/cgroup/warp.slice/memory.max", std::to_string(2 * kGiB) + "\n");
  WriteFile(root / "sys/fs/cgroup/warp.slice/memory.current", std::to_string(512 * kMiB) + "\n");
  auto limits = ReadMemoryLimits(root.path());
  WARP_ASSERT_OK(limits);
  const PlanFigures plan = FakePlan();
  auto decision = ResolveBudget(plan, std::nullopt, *limits);
  WARP_ASSERT_OK(decision);
  // Room 1536 MiB, less the 256 MiB margin (the plan's records are 0 B).
  EXPECT_EQ(decision->budget_bytes, 1536 * kMiB - kCgroupMarginBytes);
  EXPECT_THAT(decision->rule, HasSubstr("warp.slice/memory.max"));
}

TEST(ResolveBudgetTest, FakeCgroupV1TreeTooSmallIsRefused) {
  warp::testing::TempDir root;
  WriteFile(root / "proc/meminfo", "MemTotal:       25165824 kB\nMemAvailable:   20971520 kB\n");
  WriteFile(root / "proc/self/cgroup", "5:memory:/batch\n");
  WriteFile(root / "sys/fs/cgroup/memory/batch/memory.limit_in_bytes",
            std::to_string(1 * kGiB) + "\n");
  WriteFile(root / "sys/fs/cgroup/memory/batch/memory.usage_in_bytes", "0\n");
  auto limits = ReadMemoryLimits(root.path());
  WARP_ASSERT_OK(limits);
  EXPECT_THAT(ResolveBudget(FakePlan(), std::nullopt, *limits),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cgroup limit")));
}

// Kimi K3 as released (tests/configs/kimi_k3.config.json), planned before
// conversion: 92 MoE layers of 896 MXFP4 latent experts, 69 KDA layers whose
// state does not grow with the context, 24 MLA layers whose latent cache does.
TEST(PlannedManifestTest, KimiK3ReleaseConfigGivesItsRealFigures) {
  std::ifstream in(warp::testing::SourceDir() / "tests/configs/kimi_k3.config.json");
  const nlohmann::ordered_json config = nlohmann::ordered_json::parse(in);
  auto manifest = PlannedManifest("kimi_k3", config, TensorFormat::kMxfp4B32, TensorFormat::kBF16);
  WARP_ASSERT_OK(manifest);
  ASSERT_EQ(manifest->banks.size(), 92u);
  // gate/up [3072, 3584] and down [3584, 3072]: 3 x (data 5505024 + E8M0 344064)
  // = 17547264, each sub-tensor 4 KiB aligned, plus the footer: 17551360.
  EXPECT_EQ(manifest->banks.front().record_bytes, 17551360u);
  auto short_context = ComputePlan(*manifest, 4096);
  auto long_context = ComputePlan(*manifest, 1 << 20);
  WARP_ASSERT_OK(short_context);
  WARP_ASSERT_OK(long_context);
  EXPECT_EQ(short_context->working_set_bytes, uint64_t{16} * 92 * 17551360);
  // Per KDA layer 96 heads x 128 x 128 of S plus 3 x 3 x 12288 conv inputs,
  // float32, twice (the chat checkpoint).
  const uint64_t kda = 2 * (96u * 128 * 128 + 3 * 3 * 12288) * 4;
  EXPECT_EQ(short_context->fixed_state_bytes, uint64_t{69} * kda);
  EXPECT_EQ(long_context->fixed_state_bytes, uint64_t{69} * kda);
  EXPECT_EQ(short_context->kv_bytes_per_token, 24u * (512 + 64) * 4);
  EXPECT_EQ(long_context->kv_bytes - short_context->kv_bytes,
            uint64_t{(1u << 20) - 4096} * short_context->kv_bytes_per_token);
}

}  // namespace
}  // namespace warp::computed
