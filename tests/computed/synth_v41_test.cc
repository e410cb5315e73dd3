// computed synth for DeepSeek V4.1 (issue 46): its presets' shapes, the
// engram tables and the tokenizer it writes, and a tiny container that runs.

#include <set>
#include <string>

#include "common/format/container.h"
#include "common/format/engram_table.h"
#include "common/io/file.h"
#include "computed/model/engram/compressed_token_map.h"
#include "computed/model/engram/engram_hash.h"
#include "computed/model/parse_model_config.h"
#include "computed/synth/presets.h"
#include "computed/synth/synth_model.h"
#include "computed/synth/synth_tokenizer.h"
#include "computed/text/tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

// The tokenizer loads, and its compressed map counts exactly the ids asked for.
TEST(SynthTokenizerTest, CompressesToExactlyTheConfigsCount) {
  for (const auto& [vocab, compressed] : {std::pair{512u, 400u}, std::pair{4096u, 3140u},
                                          std::pair{300u, 229u}, std::pair{700u, 700u - 29u}}) {
    auto json = SynthTokenizerJson(vocab, compressed);
    WARP_ASSERT_OK(json);
    warp::testing::TempDir dir;
    WARP_ASSERT_OK(WriteFileAtomically(dir / "tokenizer.json", *json));
    auto tokenizer = text::Tokenizer::Load(dir / "tokenizer.json");
    WARP_ASSERT_OK(tokenizer);
    EXPECT_EQ((*tokenizer)->vocab_size(), static_cast<int32_t>(vocab));
    auto map = BuildCompressedTokenMap(**tokenizer, static_cast<int32_t>(compressed));
    WARP_ASSERT_OK(map);
    EXPECT_EQ(map->compressed_vocab_size, static_cast<int32_t>(compressed));
    // Its merges encode text into its own tokens, and back.
    auto ids = (*tokenizer)->Encode("abcd Abcd xy");
    WARP_ASSERT_OK(ids);
    auto text = (*tokenizer)->Decode(*ids);
    WARP_ASSERT_OK(text);
    EXPECT_EQ(*text, "abcd Abcd xy");
  }
}

TEST(SynthTokenizerTest, CountsItCannotMeetAreRefusedWithBoth) {
  EXPECT_THAT(SynthTokenizerJson(100, 50).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("vocab_size 100"), HasSubstr("at least 258"))));
  EXPECT_THAT(SynthTokenizerJson(512, 100).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("engram_compressed_vocab_size 100"),
                             HasSubstr("already normalize to"))));
}

// The slice has the release's expert shape and dtype and its engram rows;
// only its table rows (engram_vocab_size) and vocabulary are cut. Each table
// holds the sum of its layer's primes, as the engine checks.
TEST(SynthV41Test, FlashSliceHasTheReleasesExpertsAndEngramRows) {
  auto preset = FindPreset("deepseek_v41", "v41-flash-slice");
  WARP_ASSERT_OK(preset);
  EXPECT_EQ(preset->expert_format, TensorFormat::kMxfp4B32);
  auto model = ParseModelConfig("deepseek_v41", preset->config);
  WARP_ASSERT_OK(model);
  EXPECT_EQ(model->hidden_size, 5120u);
  EXPECT_EQ(model->moe_intermediate_size, 2304u);
  EXPECT_EQ(model->num_experts, 384u);
  EXPECT_EQ(model->experts_per_token, 6u);
  const EngramConfig& e = model->engram;
  EXPECT_EQ(e.head_dim, 256u);
  EXPECT_EQ(e.heads, 8u);
  EXPECT_EQ(e.max_ngram, 4u);
  EXPECT_EQ(e.RowsPerToken(), 24u);
  ASSERT_EQ(e.layers, (std::vector<uint32_t>{1, 3}));
  auto hash = EngramHash::Create({.layer_ids = {1, 3},
                                  .vocab_size = static_cast<int64_t>(e.bucket_base),
                                  .max_ngram_size = 4,
                                  .num_heads = 8,
                                  .compressed_vocab_size = static_cast<int32_t>(e.compressed_vocab)});
  WARP_ASSERT_OK(hash);
  const std::vector<EngramTableEntry> tables = EngramTablesOf(*model);
  ASSERT_EQ(tables.size(), 2u);
  for (size_t i = 0; i < tables.size(); ++i) {
    EXPECT_EQ(static_cast<int64_t>(tables[i].rows), hash->num_rows(i));
    EXPECT_EQ(tables[i].row_bytes, 264u);  // the release's row
    EXPECT_EQ(EngramRowsPerRecord(tables[i].row_bytes), 15u);
  }
  // 4 layers of 384 records of 18,800,640 B + two tables of 12.2 GiB + the trunk.
  auto bytes = ContainerBytes("deepseek_v41", preset->config, preset->expert_format,
                              preset->trunk_format);
  WARP_ASSERT_OK(bytes);
  EXPECT_EQ(EngramTablesBytes(*model), (EngramRecords(tables[0]) + EngramRecords(tables[1])) * 4096);
  EXPECT_GT(*bytes, 4ull * 384 * 18800640 + EngramTablesBytes(*model));
  EXPECT_LT(*bytes, 60ull << 30);
  // Its layer lists are fixed to its layers: --size does not scale it.
  EXPECT_THAT(ScaleToSize("deepseek_v41", preset->config, preset->expert_format,
                          preset->trunk_format, 10ull << 30)
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("without --size")));
}

// The tiny container holds a table a layer of engram_layer_ids, its records
// are the release's row format with no NaN code, and it runs: --stages shows
// the engram's rows a token and when they arrived.
TEST(SynthV41Test, TinyWritesTablesAndATokenizerAndRuns) {
  warp::testing::TempDir dir;
  const auto model = dir / "m.warp";
  auto result = SynthesizeModel(model, {.arch = "deepseek_v41", .preset = "tiny"});
  WARP_ASSERT_OK(result);
  const Manifest& manifest = result->manifest;
  ASSERT_EQ(manifest.engram.size(), 2u);
  ASSERT_TRUE(manifest.tokenizer.has_value());
  EXPECT_EQ(manifest.tokenizer->files, std::vector<std::string>{"tokenizer.json"});
  const EngramTableEntry& table = manifest.engram[0];
  EXPECT_EQ(table.layer, 1u);
  EXPECT_EQ(table.row_bytes, 33u);  // 32 codes and one scale
  auto bytes = ReadFileToString(model / table.file);
  WARP_ASSERT_OK(bytes);
  std::set<uint8_t> scales;
  const uint32_t per_record = EngramRowsPerRecord(table.row_bytes);
  for (uint64_t row = 0; row < table.rows; ++row) {
    const uint64_t at = EngramRecordOf(table, row) * kEngramRecordBytes +
                        EngramOffsetInRecord(table, row);
    for (uint32_t i = 0; i < 32; ++i) {
      const uint8_t code = static_cast<uint8_t>((*bytes)[at + i]);
      ASSERT_NE(code & 0x7F, 0x7F) << "row " << row;  // E4M3 NaN
    }
    scales.insert(static_cast<uint8_t>((*bytes)[at + 32]));
  }
  EXPECT_EQ(scales, (std::set<uint8_t>{126, 127, 128}));
  EXPECT_GT(per_record, 1u);
  auto run = warp::testing::RunBinary(
      "computed", "--log-level warn run --ids " + model.string() + " 5,6,7,8,9 -n 4 --stages");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  // Two engram layers of 3 n-gram sizes x 2 heads: 12 rows a token.
  EXPECT_THAT(run.output, HasSubstr("engram        12 rows a token"));
  EXPECT_THAT(run.output, AllOf(HasSubstr("engram time"), HasSubstr("from a pass's start"),
                                HasSubstr("its first engram layer starts at")));
}

}  // namespace
}  // namespace warp::computed
