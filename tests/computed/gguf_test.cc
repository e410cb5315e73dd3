// GgufFile: the GGUF header, metadata and tensor directory, and what it
// refuses (each refusal names the file and what is wrong).

#include "computed/convert/gguf.h"

#include <cstring>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/gguf_writer.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

using ::warp::testing::GgufWriter;

class GgufTest : public ::testing::Test {
 protected:
  absl::StatusOr<std::unique_ptr<GgufFile>> Open(const GgufWriter& writer, size_t drop_tail = 0) {
    const auto path = dir_ / "m.gguf";
    std::ofstream(path, std::ios::binary) << writer.Bytes(drop_tail);
    return GgufFile::Open(path);
  }

  // A small well-formed file: metadata of each kind and three tensor types.
  static GgufWriter Sample() {
    GgufWriter w;
    w.Str("general.architecture", "qwen3moe");
    w.Uint32("qwen3moe.expert_count", 8);
    w.Float32("qwen3moe.rope.freq_base", 1e6f);
    w.Strings("tokenizer.ggml.tokens", {"a", "b", "<|im_end|>"});
    std::string f32(4 * 64, '\0');
    for (size_t i = 0; i < f32.size(); ++i) f32[i] = static_cast<char>(i);
    w.Tensor("blk.0.attn_norm.weight", {64}, 0, f32);
    w.Tensor("blk.0.ffn_down_exps.weight", {32, 4, 8}, 8, std::string(4 * 8 * 34, '\x11'));
    w.Tensor("blk.0.ffn_gate_exps.weight", {256, 2}, 12, std::string(2 * 144, '\x22'));
    return w;
  }

  warp::testing::TempDir dir_;
};

TEST_F(GgufTest, ReadsTheMetadataAndTheTensorDirectory) {
  auto file = Open(Sample());
  WARP_ASSERT_OK(file);
  const GgufFile& g = **file;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(*g.String("general.architecture"), "qwen3moe");
  EXPECT_EQ(*g.Uint("qwen3moe.expert_count"), 8u);
  EXPECT_EQ(*g.Float("qwen3moe.rope.freq_base"), 1e6);
  const auto& tokens = std::get<GgufArray>(g.metadata().at("tokenizer.ggml.tokens").value);
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(std::get<std::string>(tokens[2].value), "<|im_end|>");
  ASSERT_EQ(g.tensors().size(), 3u);
  const GgufTensor* down = g.Find("blk.0.ffn_down_exps.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->dims, (std::vector<uint64_t>{32, 4, 8}));          // innermost first
  EXPECT_EQ(down->bytes, 4u * 8 * 34);                               // Q8_0: 34 bytes per 32
  EXPECT_EQ(g.Find("blk.0.ffn_gate_exps.weight")->bytes, 2u * 144);  // Q4_K: 144 per 256
  const GgufTensor* norm = g.Find("blk.0.attn_norm.weight");
  std::vector<std::byte> bytes(8);
  WARP_ASSERT_OK(g.Read(*norm, 4, bytes));
  EXPECT_EQ(std::to_integer<int>(bytes[0]), 4);
  EXPECT_EQ(norm->offset % 32, 0u);
  EXPECT_EQ(GgmlBlockOf(39)->bytes, 17u);  // MXFP4
}

TEST_F(GgufTest, AMissingOrMistypedKeyIsNamed) {
  auto file = Open(Sample());
  WARP_ASSERT_OK(file);
  EXPECT_THAT((*file)->Uint("qwen3moe.block_count"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("m.gguf: qwen3moe.block_count: missing"))));
  EXPECT_THAT(
      (*file)->Uint("general.architecture"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a non-negative integer")));
}

TEST_F(GgufTest, BadMagicIsRefused) {
  GgufWriter w = Sample();
  w.magic = 0x4c4c4747;
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("m.gguf"), HasSubstr("not a GGUF file"))));
}

TEST_F(GgufTest, AnUnsupportedVersionIsRefused) {
  GgufWriter w = Sample();
  w.version = 1;
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("GGUF version 1 is not supported (2, 3)")));
}

TEST_F(GgufTest, TruncatedTensorDataIsRefusedNamingTheTensor) {
  EXPECT_THAT(
      Open(Sample(), /*drop_tail=*/10),
      StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr("tensor blk.0.ffn_gate_exps.weight"),
                                                  HasSubstr("runs past the end of the file"))));
}

TEST_F(GgufTest, AnOffsetPastTheEndIsRefusedNamingTheTensor) {
  GgufWriter w = Sample();
  w.Tensor("blk.1.attn_norm.weight", {64}, 0, "", uint64_t{1} << 30);
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kDataLoss,
                                AllOf(HasSubstr("tensor blk.1.attn_norm.weight"),
                                      HasSubstr("runs past the end"))));
}

TEST_F(GgufTest, ATruncatedHeaderIsRefused) {
  GgufWriter w = Sample();
  const std::string bytes = w.Bytes();
  std::ofstream(dir_ / "m.gguf", std::ios::binary) << bytes.substr(0, 40);
  EXPECT_THAT(GgufFile::Open(dir_ / "m.gguf"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated header")));
}

TEST_F(GgufTest, ATypeWarpDoesNotReadIsRefusedNamingTheTensor) {
  GgufWriter w = Sample();
  w.Tensor("blk.1.ffn_up_exps.weight", {256, 2}, 16, std::string(2 * 66, '\0'));  // IQ2_XXS
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                AllOf(HasSubstr("tensor blk.1.ffn_up_exps.weight is type 16"),
                                      HasSubstr("which WARP does not read"))));
}

TEST_F(GgufTest, AMisalignedOrRepeatedTensorIsRefusedNamingIt) {
  GgufWriter misaligned = Sample();
  misaligned.Tensor("blk.1.attn_norm.weight", {8}, 0, std::string(32, '\0'), uint64_t{8});
  EXPECT_THAT(
      Open(misaligned),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("tensor blk.1.attn_norm.weight at offset 8 is not aligned to 32")));
  GgufWriter repeated = Sample();
  repeated.Tensor("blk.0.attn_norm.weight", {64}, 0, std::string(256, '\0'));
  EXPECT_THAT(Open(repeated), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("tensor blk.0.attn_norm.weight twice")));
}

TEST_F(GgufTest, RowsThatAreNotWholeBlocksAreRefused) {
  GgufWriter w = Sample();
  w.Tensor("blk.1.ffn_up_exps.weight", {48, 2}, 8, std::string(3 * 34, '\0'));
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("has rows of 48 elements, not whole blocks of 32")));
}

TEST_F(GgufTest, MalformedMetadataIsRefusedNamingTheKey) {
  struct Case {
    uint32_t type;
    std::string value;
    std::string error;
  };
  const std::vector<Case> cases = {
      {13, "", "m.gguf: x.bad: unknown value type 13"},
      {9,
       GgufWriter::Pod(uint32_t{9}) + GgufWriter::Pod(uint64_t{1}) + GgufWriter::Pod(uint32_t{4}) +
           GgufWriter::Pod(uint64_t{0}),
       "m.gguf: x.bad: nested arrays"},
      {9, GgufWriter::Pod(uint32_t{4}) + GgufWriter::Pod(uint64_t{1} << 40),
       "m.gguf: x.bad: an array of 1099511627776 elements"},
      {8, GgufWriter::Pod(uint64_t{1} << 40), "a string of 1099511627776 bytes at offset"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.error);
    GgufWriter w = Sample();
    w.Raw("x.bad", c.type, c.value);
    EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error)));
  }
}

// Found by tests/fuzz (gguf_fuzz): a length or count is checked against the
// bytes left in the file before anything is allocated for it (a 60 MiB string
// in a small file cost 60 MiB and a memset per open).
TEST_F(GgufTest, ALengthTheFileCannotHoldIsRefusedBeforeAllocating) {
  GgufWriter string = Sample();
  string.Raw("x.bad", 8, GgufWriter::Pod(uint64_t{60} << 20));
  EXPECT_THAT(Open(string), StatusIs(absl::StatusCode::kDataLoss,
                                     AllOf(HasSubstr("a string of 62914560 bytes at offset"),
                                           HasSubstr("runs past the end"))));
  GgufWriter array = Sample();
  array.Raw("x.bad", 9, GgufWriter::Pod(uint32_t{4}) + GgufWriter::Pod(uint64_t{1} << 20));
  EXPECT_THAT(Open(array), StatusIs(absl::StatusCode::kDataLoss,
                                    HasSubstr("m.gguf: x.bad: an array of 1048576 elements runs "
                                              "past the end of the file")));
}

// Found by tests/fuzz (gguf_fuzz): with general.alignment 2^63 a tensor at
// relative offset 2^63 wrapped to absolute offset 0 and was read from the header.
TEST_F(GgufTest, ATensorOffsetThatWrapsIsRefused) {
  GgufWriter w;
  w.Raw("general.alignment", 10, GgufWriter::Pod(uint64_t{1} << 63));
  w.Tensor("blk.0.attn_norm.weight", {8}, 0, std::string(32, '\0'), uint64_t{1} << 63);
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kDataLoss,
                                AllOf(HasSubstr("tensor blk.0.attn_norm.weight"),
                                      HasSubstr("runs past the end of the file"))));
}

TEST_F(GgufTest, ARepeatedKeyOrABadAlignmentIsRefused) {
  GgufWriter repeated = Sample();
  repeated.Uint32("qwen3moe.expert_count", 16);
  EXPECT_THAT(Open(repeated), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("metadata key qwen3moe.expert_count twice")));
  GgufWriter alignment = Sample();
  alignment.Uint32("general.alignment", 24);
  EXPECT_THAT(Open(alignment), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("general.alignment: must be a power of two")));
}

TEST_F(GgufTest, AnImplausibleTensorCountIsRefused) {
  GgufWriter w = Sample();
  w.tensor_count = uint64_t{1} << 40;
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("1099511627776 tensors and 4 metadata keys: not a "
                                          "plausible header")));
}

TEST_F(GgufTest, AnImpossibleShapeIsRefusedNamingTheTensor) {
  GgufWriter no_dims = Sample();
  no_dims.Tensor("blk.1.attn_norm.weight", {}, 0, "");
  EXPECT_THAT(Open(no_dims), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("tensor blk.1.attn_norm.weight has 0 dimensions")));
  GgufWriter empty_dim = Sample();
  empty_dim.Tensor("blk.1.attn_norm.weight", {64, 0}, 0, "");
  EXPECT_THAT(Open(empty_dim),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor blk.1.attn_norm.weight has an impossible shape")));
}

TEST_F(GgufTest, AReadPastTheTensorIsRefused) {
  auto file = Open(Sample());
  WARP_ASSERT_OK(file);
  std::vector<std::byte> bytes(8);
  EXPECT_THAT((*file)->Read(*(*file)->Find("blk.0.attn_norm.weight"), 252, bytes),
              StatusIs(absl::StatusCode::kOutOfRange,
                       HasSubstr("tensor blk.0.attn_norm.weight: bytes [252, 260) of 256")));
}

// Found by the outside probe (issue 44, finding 9): a directory that does not
// describe the data section converted into a model that ran with other
// tensors' bytes. Every byte of the data section belongs to one tensor, but
// for the alignment's padding.
TEST_F(GgufTest, OverlappingTensorDataIsRefusedNamingBothTensors) {
  GgufWriter w;
  w.Tensor("blk.0.attn_norm.weight", {64}, 0, std::string(256, '\0'));
  w.Tensor("blk.0.ffn_norm.weight", {64}, 0, std::string(256, '\0'), uint64_t{224});
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kDataLoss,
                                HasSubstr("m.gguf: tensor blk.0.ffn_norm.weight at data offset 224 "
                                          "overlaps tensor blk.0.attn_norm.weight (bytes [0, 256) "
                                          "of the data section)")));
  GgufWriter same = Sample();
  same.Tensor("blk.1.attn_norm.weight", {64}, 0, std::string(256, '\0'), uint64_t{0});
  EXPECT_THAT(Open(same), StatusIs(absl::StatusCode::kDataLoss,
                                   HasSubstr("tensor blk.1.attn_norm.weight at data offset 0 "
                                             "overlaps tensor blk.0.attn_norm.weight")));
}

TEST_F(GgufTest, DataBelongingToNoTensorIsRefused) {
  // A shifted offset leaves a gap: bytes [32, 64) are nobody's.
  GgufWriter gap;
  gap.Tensor("blk.0.attn_norm.weight", {8}, 0, std::string(32, '\0'));
  gap.Tensor("blk.0.ffn_norm.weight", {8}, 0, std::string(64, '\0'), uint64_t{64});
  EXPECT_THAT(Open(gap), StatusIs(absl::StatusCode::kDataLoss,
                                  HasSubstr("m.gguf: bytes [32, 64) of the data section belong to "
                                            "no tensor (between tensor blk.0.attn_norm.weight and "
                                            "tensor blk.0.ffn_norm.weight)")));
  // Bytes after the last tensor, past its padding.
  const auto path = dir_ / "m.gguf";
  std::ofstream(path, std::ios::binary) << Sample().Bytes() << std::string(40, '\0');
  EXPECT_THAT(GgufFile::Open(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("40 bytes at the end of the data section belong to no tensor (the "
                                 "last, blk.0.ffn_gate_exps.weight, ends at data offset 1632)")));
  // Padding to the alignment after the last tensor is how ggml writes files.
  std::ofstream(path, std::ios::binary) << Sample().Bytes() << std::string(31, '\0');
  const absl::StatusOr<std::unique_ptr<GgufFile>> padded = GgufFile::Open(path);
  WARP_EXPECT_OK(padded);
}

// The probe's "tensor count one short": the directory's last entry was read as
// padding and every tensor's data as if the section began there.
TEST_F(GgufTest, ATensorCountShortOfTheDirectoryIsRefused) {
  GgufWriter w = Sample();
  w.tensor_count = 2;
  EXPECT_THAT(Open(w), StatusIs(absl::StatusCode::kDataLoss,
                                AllOf(HasSubstr("bytes at the end of the data section belong to "
                                                "no tensor"),
                                      HasSubstr("is the header's tensor count (2) short?"))));
}

}  // namespace
}  // namespace warp::computed
