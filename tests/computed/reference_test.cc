// The forward pass against the independent PyTorch reference
// (tests/reference/, fixtures committed under tests/fixtures/): each family is
// converted from its Hugging Face checkpoint and must reproduce the
// reference's logits and greedy continuation.

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/compute/compute_context.h"
#include "common/format/container.h"
#include "common/store/engine_activity.h"
#include "common/store/engram_store.h"
#include "common/store/expert_store.h"
#include "computed/convert/converter.h"
#include "computed/engine/transformer.h"
#include "computed/engine/trunk_weights.h"
#include "computed/model/tensor_specs.h"
#include "computed/planner/planner.h"
#include "computed/run/session.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/stored_folds.h"
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
  Model(const fs::path& container_dir, size_t threads, uint32_t max_positions = 128,
        uint32_t sequences = 1, EarlyRoutes early_routes = EarlyRoutes::kStored)
      : pool_(threads) {
    auto container = Container::Open(container_dir);
    EXPECT_TRUE(container.ok()) << container.status();
    container_ = std::move(*container);
    auto store = ExpertStore::Open(container_, {});
    EXPECT_TRUE(store.ok()) << store.status();
    source_ = std::move(*store);
    if (!container_->manifest().engram.empty()) {  // DeepSeek V4.1's tables
      auto engram = EngramStore::Open(container_, {});
      EXPECT_TRUE(engram.ok()) << engram.status();
      engram_ = std::move(*engram);
    }
    auto transformer = Transformer::Create(container_, *source_, compute_,
                                           {.max_positions = max_positions,
                                            .sequences = sequences,
                                            .early_routes = early_routes,
                                            .engram_store = engram_.get()});
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
  ComputeContext compute_{pool_, Arithmetic{}};
  std::shared_ptr<const Container> container_;
  std::unique_ptr<ExpertStore> source_;
  std::unique_ptr<EngramStore> engram_;
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

// The converter's folds (ROUTER.o_proj_fold) are, bit for bit, the folds
// the engine makes at load from the trunk's own bytes, on any pool.
TEST_P(ReferenceTest, ConvertedFoldsAreTheFoldsMadeAtLoad) {
  ExpectStoredFoldsAreTheFoldsMadeAtLoad(model_dir_);
}

// Chat's Rewind: forgetting the last positions and running them again gives
// the bits of the first run. Attention caches continue where asked; a
// recurrent (KDA) layer from its checkpoint, or from 0 before it; a
// compressor (DeepSeek V4) within its open window, else as a recurrent layer.
// A pre-norm layer routed before its mixer's output projection (EarlyRoute)
// reads its records sooner and changes no bit, whether its fold is the one
// the converter wrote (the default) or one folded at load (`--early-route` on
// a container converted without them): the same bits, so the same guesses.
// Where the routing rule is scale-free the early route names exactly the
// experts the layer then routes to; where it is not (a selection or router
// bias) it is an estimate.
TEST_P(ReferenceTest, EarlyRoutesChangeNoBitAndNameTheRoutedExperts) {
  const fs::path unfolded = dir_ / "unfolded.warp";
  WARP_ASSERT_OK(
      ConvertCheckpoint(FixtureDir(GetParam()), unfolded, {.early_route_folds = false}).status());
  for (const size_t chunk : {size_t{1}, tokens_.size()}) {
    SCOPED_TRACE(chunk);
    Model stored(model_dir_, 2), at_load(unfolded, 2, 128, 1, EarlyRoutes::kFolded),
        plain(model_dir_, 2, 128, 1, EarlyRoutes::kOff), none(unfolded, 2);
    const std::vector<float> without = plain.Prefill(tokens_, chunk);
    for (Model* early : {&stored, &at_load, &none}) {
      const std::vector<float> with = early->Prefill(tokens_, chunk);
      ASSERT_EQ(with.size(), without.size());
      EXPECT_EQ(std::memcmp(with.data(), without.data(), with.size() * sizeof(float)), 0);
    }
    EXPECT_EQ(plain->stats().early_routed, 0u);
    EXPECT_EQ(none->stats().early_routed, 0u);  // no fold stored, none made
    const ForwardStats& stats = stored->stats();
    EXPECT_EQ(at_load->stats().early_routed, stats.early_routed);
    EXPECT_EQ(at_load->stats().early_unused, stats.early_unused);
    const std::string family = GetParam();
    if (stored->plan().residual != ResidualKind::kPreNorm) {
      EXPECT_EQ(stats.early_routed, 0u);  // mHC, attention residuals: no such fold
      continue;
    }
    EXPECT_GT(stats.early_routed, 0u);
    if (family.starts_with("qwen3") || family.starts_with("mixtral")) {
      EXPECT_EQ(stats.early_unused, 0u) << stats.early_routed;
    } else {
      EXPECT_LE(stats.early_unused * 10, stats.early_routed);
    }
  }
}

// A token-by-token run of a converted fixture with a lookahead of `width`
// experts, every rank hinted, counting the experts routed by each token's
// input (not by a hash table).
struct LookaheadRun {
  LookaheadRun(const fs::path& model, const std::vector<int32_t>& tokens, uint32_t width)
      : pool(2) {
    auto container = Container::Open(model);
    EXPECT_TRUE(container.ok()) << container.status();
    const std::shared_ptr<const Container> shared = std::move(*container);
    auto opened = ExpertStore::Open(shared, {});
    EXPECT_TRUE(opened.ok()) << opened.status();
    store = std::move(*opened);
    Transformer::Options options{.lookahead = width, .lookahead_precision = 0};
    if (!shared->manifest().engram.empty()) {  // DeepSeek V4.1's tables
      auto tables = EngramStore::Open(shared, {});
      EXPECT_TRUE(tables.ok()) << tables.status();
      engram = std::move(*tables);
      options.engram_store = engram.get();
    }
    options.on_route = [this](uint32_t, uint32_t layer, const std::vector<uint32_t>& experts) {
      if (!hashed.at(layer)) routed_by_input += experts.size();
    };
    auto created = Transformer::Create(shared, *store, compute, options);
    EXPECT_TRUE(created.ok()) << created.status();
    transformer = std::move(*created);
    for (const LayerPlan& layer : transformer->plan().layers) {
      hashed.push_back(!layer.ffn.hash_table.empty());
    }
    for (int32_t token : tokens) {
      auto step = transformer->Forward({&token, 1});
      EXPECT_TRUE(step.ok()) << step.status();
      if (step.ok()) logits.insert(logits.end(), step->begin(), step->end());
    }
  }

  ThreadPool pool;
  ComputeContext compute{pool, Arithmetic{}};
  std::unique_ptr<ExpertStore> store;
  std::unique_ptr<EngramStore> engram;
  std::unique_ptr<Transformer> transformer;
  std::vector<bool> hashed;  // [layer]
  uint64_t routed_by_input = 0;
  std::vector<float> logits;
};

// The lookahead predicts every MoE layer routed by its input, the first
// included, as the layer starts (before its attention: Lookahead), and scores
// each prediction against the routing that follows; its estimate of the
// router's input leaves the residual stream as it was (the bits of no
// lookahead, for every residual scheme).
TEST_P(ReferenceTest, TheLookaheadPredictsEveryMoeLayerAsItStartsAndChangesNoBit) {
  const LookaheadRun on(model_dir_, tokens_, 4), off(model_dir_, tokens_, 0);
  ASSERT_EQ(on.logits.size(), off.logits.size());
  EXPECT_EQ(std::memcmp(on.logits.data(), off.logits.data(), on.logits.size() * sizeof(float)), 0);
  EXPECT_GT(on.routed_by_input, 0u);
  EXPECT_EQ(on.transformer->lookahead_stats().routed, on.routed_by_input);
  EXPECT_GT(on.transformer->lookahead_stats().predicted, 0u);
  EXPECT_EQ(off.transformer->lookahead_stats().routed, 0u);
}

TEST_P(ReferenceTest, RewindAndRecomputeGivesTheSameBits) {
  Model model(model_dir_, 2);
  const size_t vocab = model->config().vocab_size;
  bool recurrent = false, compressed = false;
  uint32_t group = 1;  // V4.1's KV sources rewind to the start of an open group
  for (const LayerPlan& layer : model->plan().layers) {
    recurrent |= std::holds_alternative<KdaParams>(layer.mixer.params);
    const auto* mqa = std::get_if<CompressedMqaParams>(&layer.mixer.params);
    compressed |= mqa != nullptr && mqa->compression != CompressionKind::kNone;
    if (const auto* shared = std::get_if<SharedCompressedMqaParams>(&layer.mixer.params);
        shared != nullptr && shared->owns_compressor()) {
      compressed = true;
      group = std::max(group, shared->compress_rate);
    }
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
      EXPECT_TRUE(from == keep || from == checkpointed || from == keep / group * group)
          << "rewind to " << keep << ": " << from;
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
  Model three(model_dir_, 1, /*max_positions=*/64, /*sequences=*/3);
  auto plan3 = ComputePlan((*container)->manifest(), 64, "manifest.json", 3);
  WARP_ASSERT_OK(plan3);
  EXPECT_EQ(three->StateBytes(), plan3->kv_bytes);
  EXPECT_EQ(plan3->kv_bytes, 3 * plan->kv_bytes);
}

// serve --parallel: conversations batched in one pass — decode steps of
// several sequences together, a prompt chunk of one beside another's step —
// give each sequence the bits it gets alone, while each MoE layer reads the
// union of their experts once; a rewind of one leaves the others as they were.
TEST_P(ReferenceTest, BatchedSequencesGiveTheBitsOfEachAlone) {
  const size_t n = tokens_.size();
  std::vector<std::vector<int32_t>> texts(3);
  for (size_t i = 0; i < n; ++i) {
    texts[0].push_back(tokens_[i]);
    texts[1].push_back(tokens_[n - 1 - i]);
    texts[2].push_back(tokens_[(i + 7) % n]);
  }
  std::vector<std::vector<float>> alone;
  for (const std::vector<int32_t>& text : texts) {
    Model model(model_dir_, 2);
    alone.push_back(model.Prefill(text, text.size()));
  }
  Model batched(model_dir_, 2, 128, /*sequences=*/3);
  const size_t vocab = batched->config().vocab_size;
  // Sequence s starts with a prompt chunk of prompt[s] tokens at step start[s],
  // then one token a step; every chunk asks for all of its rows.
  const size_t start[3] = {0, 1, 4}, prompt[3] = {5, 6, 3};
  std::vector<size_t> done(3, 0);
  for (size_t step = 0; done[0] < n || done[1] < n || done[2] < n; ++step) {
    std::vector<Transformer::SequenceChunk> chunks;
    std::vector<size_t> firsts;
    for (uint32_t s = 0; s < 3; ++s) {
      if (step < start[s] || done[s] == n) continue;
      const size_t take = done[s] == 0 ? prompt[s] : 1;
      chunks.push_back({.sequence = s,
                        .tokens = std::span(texts[s]).subspan(done[s], take),
                        .logits = Transformer::Logits::kEvery});
      firsts.push_back(done[s]);
      done[s] += take;
    }
    auto logits = batched->ForwardBatch(chunks);
    WARP_ASSERT_OK(logits);
    for (size_t c = 0; c < chunks.size(); ++c) {
      const uint32_t s = chunks[c].sequence;
      ASSERT_EQ((*logits)[c].size(), chunks[c].tokens.size() * vocab);
      EXPECT_EQ(0, std::memcmp((*logits)[c].data(), &alone[s][firsts[c] * vocab],
                               (*logits)[c].size() * sizeof(float)))
          << "sequence " << s << " at position " << firsts[c] << ", step " << step;
    }
  }
  for (uint32_t s = 0; s < 3; ++s) EXPECT_EQ(batched->position(s), n);
  const ForwardStats& stats = batched->stats();
  if (stats.expert_read_bytes > 0) {
    EXPECT_GT(stats.sequence_union_bytes, stats.expert_read_bytes)
        << "three sequences never shared an expert";
  }
  // A rewind of sequence 1 recomputes its bits; sequences 0 and 2 keep theirs.
  const uint32_t from = batched->Rewind(static_cast<uint32_t>(n - 4), 1);
  auto again = batched->Forward(std::span(texts[1]).subspan(from), Transformer::Logits::kEvery, 1);
  WARP_ASSERT_OK(again);
  EXPECT_EQ(0, std::memcmp(again->data(), &alone[1][from * vocab], again->size() * sizeof(float)));
  EXPECT_EQ(batched->position(0), n);
  EXPECT_EQ(batched->position(2), n);
}

// The prompt cache on disk: a sequence's state saved partway (after a
// checkpoint, as a prompt's end leaves one) and loaded into another engine's
// second sequence continues with the bits of a run never saved, and a rewind
// to the checkpoint after loading too; a truncated state is refused and
// leaves the sequence empty.
TEST_P(ReferenceTest, ASavedStateContinuesWithTheBitsOfARunNeverSaved) {
  const size_t n = tokens_.size(), cut = n / 2;
  Model whole(model_dir_, 2);
  const std::vector<float> every = whole.Prefill(tokens_, n);
  const size_t vocab = whole->config().vocab_size;
  const std::span<const int32_t> tokens(tokens_);
  Model first(model_dir_, 2);
  WARP_ASSERT_OK(first->Forward(tokens.first(cut - 1), Transformer::Logits::kNone));
  first->Checkpoint();
  WARP_ASSERT_OK(first->Forward(tokens.subspan(cut - 1, 1)));
  const std::string state = first->SaveSequence();

  Model second(model_dir_, 2, 128, /*sequences=*/2);
  WARP_ASSERT_OK(second->LoadSequence(state, 1));
  EXPECT_EQ(second->position(1), cut);
  EXPECT_EQ(second->position(0), 0u);
  auto rest = second->Forward(tokens.subspan(cut), Transformer::Logits::kEvery, 1);
  WARP_ASSERT_OK(rest);
  ASSERT_EQ(rest->size(), (n - cut) * vocab);
  EXPECT_EQ(0, std::memcmp(rest->data(), &every[cut * vocab], rest->size() * sizeof(float)));
  // Saved again, the continued state is the same bytes as the uninterrupted one's.
  Model straight(model_dir_, 2);
  WARP_ASSERT_OK(straight->Forward(tokens.first(cut - 1), Transformer::Logits::kNone));
  straight->Checkpoint();
  WARP_ASSERT_OK(straight->Forward(tokens.subspan(cut - 1)));
  EXPECT_TRUE(second->SaveSequence(1) == straight->SaveSequence()) << "states differ";

  Model third(model_dir_, 2);
  WARP_ASSERT_OK(third->LoadSequence(state));
  const uint32_t from = third->Rewind(static_cast<uint32_t>(cut - 1));
  auto again = third->Forward(tokens.subspan(from));
  WARP_ASSERT_OK(again);
  EXPECT_EQ(0, std::memcmp(again->data(), &every[from * vocab], again->size() * sizeof(float)));

  const absl::Status truncated =
      third->LoadSequence(std::string_view(state).substr(0, state.size() - 3));
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss) << truncated;
  EXPECT_EQ(third->position(), 0u);
  auto fresh = third->Forward(tokens);
  WARP_ASSERT_OK(fresh);
  EXPECT_EQ(0, std::memcmp(fresh->data(), every.data(), every.size() * sizeof(float)));
}

// A prompt's chunks before its last run no head, and the last gives the bits
// of a whole prefill's last row: through the engine and through a session's
// PrefillLast and Feed.
TEST_P(ReferenceTest, APromptsChunksBeforeItsLastRunNoHead) {
  Model whole(model_dir_, 2);
  const std::vector<float> every = whole.Prefill(tokens_, tokens_.size());
  const size_t vocab = whole->config().vocab_size, n = tokens_.size();
  const float* last_row = &every[(n - 1) * vocab];
  const std::span<const int32_t> tokens(tokens_);
  Model model(model_dir_, 2);
  auto first = model->Forward(tokens.first(7), Transformer::Logits::kNone);
  WARP_ASSERT_OK(first);
  EXPECT_TRUE(first->empty());
  EXPECT_EQ(model->stats().head_rows, 0u);
  auto last = model->Forward(tokens.subspan(7), Transformer::Logits::kLast);
  WARP_ASSERT_OK(last);
  ASSERT_EQ(last->size(), vocab);
  EXPECT_EQ(0, std::memcmp(last->data(), last_row, vocab * sizeof(float)));
  EXPECT_EQ(model->stats().head_rows, 1u);

  // A session computes in its own precision (q8 activations): its reference
  // is its own whole prompt.
  auto at_once = Session::Open({.model = model_dir_.string(),
                                .engine = {.max_positions = 128},
                                .compute = {.threads = 2}});
  WARP_ASSERT_OK(at_once);
  auto reference = (*at_once)->Prefill(tokens);
  WARP_ASSERT_OK(reference);
  last_row = &(*reference)[(n - 1) * vocab];
  auto session = Session::Open({.model = model_dir_.string(),
                                .engine = {.max_positions = 128},
                                .compute = {.threads = 2},
                                .run = {.prefill_chunk = 5}});
  WARP_ASSERT_OK(session);
  auto logits = (*session)->PrefillLast(tokens);
  WARP_ASSERT_OK(logits);
  ASSERT_EQ(logits->size(), vocab);
  EXPECT_EQ(0, std::memcmp(logits->data(), last_row, vocab * sizeof(float)));
  EXPECT_EQ((*session)->transformer().stats().head_rows, 1u) << "chunks of 5 of " << n;
  (*session)->Rewind(0);
  WARP_ASSERT_OK((*session)->Feed(tokens.first(n - 1)));
  auto step = (*session)->Step(tokens_[n - 1]);
  WARP_ASSERT_OK(step);
  EXPECT_EQ(0, std::memcmp(step->data(), last_row, vocab * sizeof(float)));
  EXPECT_EQ((*session)->transformer().stats().head_rows, 2u);
}

TEST_P(ReferenceTest, ABatchNamesItsBadChunk) {
  Model model(model_dir_, 1, 128, /*sequences=*/2);
  const std::vector<int32_t> one = {tokens_[0]};
  using Chunk = Transformer::SequenceChunk;
  const std::vector<Chunk> twice = {{.sequence = 1, .tokens = one}, {.sequence = 1, .tokens = one}};
  EXPECT_THAT(model->ForwardBatch(twice).status().message(),
              ::testing::HasSubstr("sequence 1 appears twice"));
  const std::vector<Chunk> missing = {{.sequence = 2, .tokens = one}};
  EXPECT_THAT(model->ForwardBatch(missing).status().message(),
              ::testing::HasSubstr("sequence 2 does not exist (of 2)"));
  EXPECT_THAT(model->ForwardBatch({}).status().message(),
              ::testing::HasSubstr("a forward pass of no chunk"));
  const std::vector<Chunk> empty = {{.sequence = 0, .tokens = one}, {.sequence = 1}};
  EXPECT_THAT(model->ForwardBatch(empty).status().message(),
              ::testing::HasSubstr("a chunk of no token"));
  EXPECT_EQ(model->position(0), 0u);
  EXPECT_EQ(model->position(1), 0u);
  // The engine holds 1 to 64 sequences.
  auto opened = Container::Open(model_dir_);
  WARP_ASSERT_OK(opened);
  std::shared_ptr<const Container> container = std::move(*opened);
  auto store = ExpertStore::Open(container, {});
  WARP_ASSERT_OK(store);
  ThreadPool pool(1);
  ComputeContext compute(pool, Arithmetic{});
  for (uint32_t sequences : {0u, 65u}) {
    auto refused = Transformer::Create(container, **store, compute, {.sequences = sequences});
    EXPECT_THAT(refused.status().message(),
                ::testing::HasSubstr(std::to_string(sequences) + " is outside 1..64"));
  }
}

// An ExpertSource that notes, at each demand read, whether the embedded
// stores' prefault may run then (EngineActivity).
class ActivityProbe : public ExpertSource {
 public:
  explicit ActivityProbe(ExpertSource& inner) : inner_(inner) {}

  std::shared_ptr<ReadBatch> Read(std::span<const ExpertKey> keys, Priority priority) override {
    prefault_allowed_.push_back(
        EngineActivity::Process().AwaitPrefaultAllowed(absl::ZeroDuration()));
    return inner_.Read(keys, priority);
  }
  void Prefetch(std::span<const ExpertKey> keys, Priority priority) override {
    inner_.Prefetch(keys, priority);
  }
  void CancelSpeculative(uint32_t through_layer) override {
    inner_.CancelSpeculative(through_layer);
  }

  // One entry per Read since the last call.
  std::vector<bool> TakeAllowed() { return std::exchange(prefault_allowed_, {}); }

 private:
  ExpertSource& inner_;
  std::vector<bool> prefault_allowed_;
};

// A prefill pass (a chunk of 2+ tokens) pauses the prefault while it computes;
// a decode step does not, and nothing is left paused after either.
TEST(PrefaultPauseTest, PrefillPassesPauseThePrefaultAndDecodeStepsDoNot) {
  warp::testing::TempDir dir;
  WARP_ASSERT_OK(ConvertCheckpoint(FixtureDir("qwen3_moe_f32"), dir / "m.warp", {}));
  auto opened = Container::Open(dir / "m.warp");
  WARP_ASSERT_OK(opened);
  const std::shared_ptr<const Container> container = std::move(*opened);
  auto store = ExpertStore::Open(container, {});
  WARP_ASSERT_OK(store);
  ActivityProbe probe(**store);
  ThreadPool pool(2);
  ComputeContext compute(pool, Arithmetic{});
  auto transformer = Transformer::Create(container, probe, compute, {.max_positions = 64});
  WARP_ASSERT_OK(transformer);
  const std::vector<int32_t> prompt = {1, 2, 3, 4, 5, 6, 7, 8};
  WARP_ASSERT_OK((*transformer)->Forward(prompt));
  std::vector<bool> allowed = probe.TakeAllowed();
  ASSERT_FALSE(allowed.empty());
  EXPECT_THAT(allowed, ::testing::Each(false));
  EXPECT_TRUE(EngineActivity::Process().AwaitPrefaultAllowed(absl::ZeroDuration()));
  const int32_t next = 9;
  WARP_ASSERT_OK((*transformer)->Forward({&next, 1}));
  allowed = probe.TakeAllowed();
  ASSERT_FALSE(allowed.empty());
  EXPECT_THAT(allowed, ::testing::Each(true));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ReferenceTest,
                         ::testing::Values("deepseek_v3_f32", "deepseek_v3_bf16",
                                           "deepseek_v3_yarn_f32", "deepseek_v3_fp8",
                                           "deepseek_v3_noqlora_f32", "qwen3_moe_f32",
                                           "qwen3_moe_bf16", "qwen3_moe_nonorm_f32", "glm4_moe_f32",
                                           "mixtral_f32", "gpt_oss_bf16", "gpt_oss_mxfp4",
                                           "gpt_oss_yarn_truncate_f32", "kimi_linear_bf16",
                                           "kimi_k3_bf16", "kimi_k3_mxfp4", "deepseek_v4_bf16",
                                           "deepseek_v4_native", "glm5_next_bf16",
                                           "deepseek_v41_noengram", "deepseek_v41_native"));

}  // namespace
}  // namespace warp::computed
