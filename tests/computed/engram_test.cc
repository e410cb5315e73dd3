// DeepSeek V4.1's engram hash: numpy's RNG, the prime layout, the n-gram hash
// and the compressed token map, against real numpy and unicodedata
// (engram_test_vectors.h, from tests/reference/engram_vectors.py) and against
// the values published for the release (FAMILIES.md, deepseek_v41).

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "computed/model/engram/compressed_token_map.h"
#include "computed/model/engram/engram_hash.h"
#include "computed/model/engram/numpy_random.h"
#include "computed/text/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/engram_test_vectors.h"
#include "tests/testing/status_matchers.h"

namespace warp::computed {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;
namespace vectors = engram_vectors;

// text_config of deepseek-ai/DeepSeek-V4.1-Flash; pad: map[engram_pad_id = 2]
// is not known without the tokenizer, and the layout does not depend on it.
EngramHashOptions ReleaseOptions() {
  return {.layer_ids = {1, 14},
          .vocab_size = 16000000,
          .max_ngram_size = 4,
          .num_heads = 8,
          .compressed_vocab_size = 99092,
          .pad_id = 2};
}

std::vector<std::string> Strings(const std::vector<const char*>& texts) {
  return std::vector<std::string>(texts.begin(), texts.end());
}

TEST(NumpyRandomTest, Pcg64SeedsAndDrawsAsNumpy) {
  for (const vectors::Pcg64Vector& v : vectors::kPcg64) {
    SCOPED_TRACE(v.seed);
    NumpyPcg64 generator(v.seed);
    EXPECT_EQ(static_cast<uint64_t>(generator.state() >> 64), v.state_hi);
    EXPECT_EQ(static_cast<uint64_t>(generator.state()), v.state_lo);
    EXPECT_EQ(static_cast<uint64_t>(generator.increment() >> 64), v.inc_hi);
    EXPECT_EQ(static_cast<uint64_t>(generator.increment()), v.inc_lo);
    std::vector<uint64_t> raw;
    for (size_t k = 0; k < v.raw.size(); ++k) raw.push_back(generator.NextUint64());
    EXPECT_EQ(raw, v.raw);
  }
}

TEST(NumpyRandomTest, IntegersAsNumpyOnEveryPath) {
  for (const vectors::IntegersVector& v : vectors::kIntegers) {
    SCOPED_TRACE(::testing::Message()
                 << "seed " << v.seed << " [" << v.low << ", " << v.high << ")");
    NumpyPcg64 generator(v.seed);
    EXPECT_EQ(NumpyIntegers(generator, v.low, v.high, v.values.size()), v.values);
  }
}

TEST(NumpyRandomTest, Uint32DrawsAreHalvesOfOneUint64) {
  NumpyPcg64 a(123);
  NumpyPcg64 b(123);
  const uint64_t full = a.NextUint64();
  EXPECT_EQ(b.NextUint32(), static_cast<uint32_t>(full));
  EXPECT_EQ(b.NextUint32(), static_cast<uint32_t>(full >> 32));
  EXPECT_EQ(b.NextUint64(), a.NextUint64());
}

TEST(EngramHashTest, ReleaseMultipliersArePublishedValues) {
  absl::StatusOr<EngramHash> hash = EngramHash::Create(ReleaseOptions());
  WARP_ASSERT_OK(hash);
  EXPECT_THAT(hash->multipliers(0),
              ElementsAre(76632096046245, 4839876093313, 35959672319349, 73987337458391));
  EXPECT_THAT(hash->multipliers(1),
              ElementsAre(67716810739261, 51510806800915, 30921347202721, 82619226485591));
}

TEST(EngramHashTest, ReleasePrimesOffsetsAndRowsArePublishedValues) {
  absl::StatusOr<EngramHash> hash = EngramHash::Create(ReleaseOptions());
  WARP_ASSERT_OK(hash);
  ASSERT_EQ(hash->num_layers(), 2u);
  ASSERT_EQ(hash->num_columns(), 24u);
  std::vector<int64_t> primes;
  for (size_t layer_idx = 0; layer_idx < 2; ++layer_idx) {
    const auto layer_primes = hash->primes(layer_idx);
    primes.insert(primes.end(), layer_primes.begin(), layer_primes.end());
    int64_t offset = 0;  // offsets: the exclusive cumulative sum of the layer's primes
    for (size_t column = 0; column < 24; ++column) {
      EXPECT_EQ(hash->offsets(layer_idx)[column], offset);
      offset += layer_primes[column];
    }
  }
  EXPECT_THAT(std::vector<int64_t>(primes.begin(), primes.begin() + 3),
              ElementsAre(16000057, 16000079, 16000081));
  EXPECT_THAT(std::vector<int64_t>(primes.end() - 3, primes.end()),
              ElementsAre(16000877, 16000879, 16000889));
  EXPECT_EQ(std::set<int64_t>(primes.begin(), primes.end()).size(), 48u);
  EXPECT_EQ(hash->num_rows(0), 384006168);
  EXPECT_EQ(hash->num_rows(1), 384016682);
}

TEST(EngramHashTest, ReleaseHashWithPadsAndAnImageAsNumpy) {
  absl::StatusOr<EngramHash> hash = EngramHash::Create(ReleaseOptions());
  WARP_ASSERT_OK(hash);
  EXPECT_EQ(hash->HashSequence(vectors::kHashIds), vectors::kHashRows);
}

TEST(EngramHashTest, SmallLayoutAsNumpy) {
  absl::StatusOr<EngramHash> hash = EngramHash::Create({.layer_ids = {0, 3},
                                                        .vocab_size = 100,
                                                        .max_ngram_size = 3,
                                                        .num_heads = 2,
                                                        .compressed_vocab_size = 11,
                                                        .pad_id = 10});
  WARP_ASSERT_OK(hash);
  std::vector<int64_t> primes;
  std::vector<int64_t> multipliers;
  for (size_t layer_idx = 0; layer_idx < 2; ++layer_idx) {
    primes.insert(primes.end(), hash->primes(layer_idx).begin(), hash->primes(layer_idx).end());
    multipliers.insert(multipliers.end(), hash->multipliers(layer_idx).begin(),
                       hash->multipliers(layer_idx).end());
  }
  EXPECT_EQ(primes, vectors::kSmallPrimes);
  EXPECT_EQ(multipliers, vectors::kSmallMultipliers);
  EXPECT_EQ(hash->HashSequence(vectors::kSmallHashIds), vectors::kSmallHashRows);
}

TEST(EngramHashTest, RowsOfAPositionNeedOnlyTheTokensUpToIt) {
  absl::StatusOr<EngramHash> hash = EngramHash::Create(ReleaseOptions());
  WARP_ASSERT_OK(hash);
  const std::vector<int64_t> all = hash->HashSequence(vectors::kHashIds);
  const size_t stride = hash->rows_per_token();
  for (size_t position = 0; position < vectors::kHashIds.size(); ++position) {
    std::vector<int64_t> rows(stride);
    hash->HashPosition(std::span(vectors::kHashIds).first(position + 1), position, rows);
    EXPECT_THAT(rows, ElementsAreArray(all.begin() + position * stride,
                                       all.begin() + (position + 1) * stride));
  }
}

TEST(EngramHashTest, RejectsFieldsOutOfRange) {
  EngramHashOptions options = ReleaseOptions();
  options.pad_id = 99092;
  EXPECT_THAT(EngramHash::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("pad id")));
  options = ReleaseOptions();
  options.max_ngram_size = 1;
  EXPECT_THAT(EngramHash::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("engram_max_ngram_size")));
  options = ReleaseOptions();
  options.compressed_vocab_size = 0;
  EXPECT_THAT(EngramHash::Create(options), StatusIs(absl::StatusCode::kInvalidArgument,
                                                    HasSubstr("engram_compressed_vocab_size")));
}

TEST(CompressedTokenMapTest, NormalizesAsTokenizersPipeline) {
  for (const vectors::NormalizeVector& v : vectors::kNormalize) {
    EXPECT_EQ(NormalizeEngramText(v.text), v.normalized) << "text: " << v.text;
  }
}

TEST(CompressedTokenMapTest, NumbersKeysInFirstSeenOrder) {
  absl::StatusOr<CompressedTokenMap> map = BuildCompressedTokenMap(
      Strings(vectors::kMapDecoded), Strings(vectors::kMapRaw), vectors::kMapCount);
  WARP_ASSERT_OK(map);
  EXPECT_EQ(map->lookup, vectors::kMapLookup);
  EXPECT_EQ(map->compressed_vocab_size, vectors::kMapCount);
}

TEST(CompressedTokenMapTest, CountOtherThanTheConfigIsRefused) {
  EXPECT_THAT(
      BuildCompressedTokenMap(Strings(vectors::kMapDecoded), Strings(vectors::kMapRaw), 99092),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               AllOf(HasSubstr("engram_compressed_vocab_size is 99092"),
                     HasSubstr("normalize to 7 compressed ids"))));
}

TEST(CompressedTokenMapTest, RefusesInvalidUtf8AndUnequalLists) {
  const std::vector<std::string> decoded = {"ok", "\xC3"};
  const std::vector<std::string> raw_tokens = {"ok", "x"};
  EXPECT_THAT(BuildCompressedTokenMap(decoded, raw_tokens, 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token id 1")));
  EXPECT_THAT(BuildCompressedTokenMap(decoded, std::span(raw_tokens).first(1), 2),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("raw tokens")));
}

// A byte-level BPE tokenizer.json: "\u00c3" is the byte 0xC3 alone (decodes to
// U+FFFD, so keyed by its raw token), "\u00c3\u00a1" is "á".
constexpr char kTinyTokenizerJson[] = R"({
  "version": "1.0",
  "added_tokens": [{"id": 6, "content": "<|end|>", "single_word": false, "lstrip": false,
                    "rstrip": false, "normalized": false, "special": true}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
                    "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true,
              "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": null,
            "end_of_word_suffix": null, "fuse_unk": false, "byte_fallback": false,
            "vocab": {"A": 0, "a": 1, "\u0120a": 2, "\u00c3": 3, "\u00c3\u00a1": 4, "\u0120": 5},
            "merges": []}
})";

TEST(CompressedTokenMapTest, BuildsFromATokenizer) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / "engram_tiny_tokenizer.json";
  std::ofstream(path) << kTinyTokenizerJson;
  absl::StatusOr<std::unique_ptr<text::Tokenizer>> tokenizer = text::Tokenizer::Load(path);
  WARP_ASSERT_OK(tokenizer);
  EXPECT_EQ((*tokenizer)->IdToToken(3), "\xC3\x83");
  EXPECT_EQ((*tokenizer)->IdToToken(6), "<|end|>");
  absl::StatusOr<CompressedTokenMap> map = BuildCompressedTokenMap(**tokenizer, 4);
  WARP_ASSERT_OK(map);
  EXPECT_THAT(map->lookup, ElementsAre(0, 0, 0, 1, 0, 2, 3));
  EXPECT_THAT(BuildCompressedTokenMap(**tokenizer, 5),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("engram_compressed_vocab_size is 5"),
                             HasSubstr("7 token ids normalize to 4"))));
}

}  // namespace
}  // namespace warp::computed
