// Pins the byte arithmetic of every tensor format (common/format/tensor_format.h)
// to the numbers the per-format switches gave before the trait table replaced
// them (issue 45, part 3): a row of kFormatTraits must not move a byte.

#include "common/format/tensor_format.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace warp {
namespace {

struct Sizes {
  std::string_view format;
  std::vector<uint64_t> shape;
  uint64_t data_bytes, scale_bytes;
};

// Written down from the switches of 742c0bf, before the table.
const Sizes kSizes[] = {
  {"f32", {7168,2048}, 58720256, 0},
  {"f32", {256,512}, 524288, 0},
  {"f32", {130,3}, 1560, 0},
  {"f32", {5}, 20, 0},
  {"f32", {3,1,4}, 48, 0},
  {"f32", {129,7168}, 3698688, 0},
  {"f32", {1,256}, 1024, 0},
  {"f32", {64,96}, 24576, 0},
  {"f16", {7168,2048}, 29360128, 0},
  {"f16", {256,512}, 262144, 0},
  {"f16", {130,3}, 780, 0},
  {"f16", {5}, 10, 0},
  {"f16", {3,1,4}, 24, 0},
  {"f16", {129,7168}, 1849344, 0},
  {"f16", {1,256}, 512, 0},
  {"f16", {64,96}, 12288, 0},
  {"bf16", {7168,2048}, 29360128, 0},
  {"bf16", {256,512}, 262144, 0},
  {"bf16", {130,3}, 780, 0},
  {"bf16", {5}, 10, 0},
  {"bf16", {3,1,4}, 24, 0},
  {"bf16", {129,7168}, 1849344, 0},
  {"bf16", {1,256}, 512, 0},
  {"bf16", {64,96}, 12288, 0},
  {"f8_e4m3_b128", {7168,2048}, 14680064, 3584},
  {"f8_e4m3_b128", {256,512}, 131072, 32},
  {"f8_e4m3_b128", {130,3}, 390, 8},
  {"f8_e4m3_b128", {129,7168}, 924672, 448},
  {"f8_e4m3_b128", {1,256}, 256, 8},
  {"f8_e4m3_b128", {64,96}, 6144, 4},
  {"q8_b32", {7168,2048}, 14680064, 917504},
  {"q8_b32", {256,512}, 131072, 8192},
  {"q8_b32", {129,7168}, 924672, 57792},
  {"q8_b32", {1,256}, 256, 16},
  {"q8_b32", {64,96}, 6144, 384},
  {"q4_b32", {7168,2048}, 7340032, 917504},
  {"q4_b32", {256,512}, 65536, 8192},
  {"q4_b32", {129,7168}, 462336, 57792},
  {"q4_b32", {1,256}, 128, 16},
  {"q4_b32", {64,96}, 3072, 384},
  {"mxfp4_b32", {7168,2048}, 7340032, 458752},
  {"mxfp4_b32", {256,512}, 65536, 4096},
  {"mxfp4_b32", {129,7168}, 462336, 28896},
  {"mxfp4_b32", {1,256}, 128, 8},
  {"mxfp4_b32", {64,96}, 3072, 192},
  {"ggml_q8_0", {7168,2048}, 15597568, 0},
  {"ggml_q8_0", {256,512}, 139264, 0},
  {"ggml_q8_0", {129,7168}, 982464, 0},
  {"ggml_q8_0", {1,256}, 272, 0},
  {"ggml_q8_0", {64,96}, 6528, 0},
  {"ggml_q4_0", {7168,2048}, 8257536, 0},
  {"ggml_q4_0", {256,512}, 73728, 0},
  {"ggml_q4_0", {129,7168}, 520128, 0},
  {"ggml_q4_0", {1,256}, 144, 0},
  {"ggml_q4_0", {64,96}, 3456, 0},
  {"ggml_mxfp4", {7168,2048}, 7798784, 0},
  {"ggml_mxfp4", {256,512}, 69632, 0},
  {"ggml_mxfp4", {129,7168}, 491232, 0},
  {"ggml_mxfp4", {1,256}, 136, 0},
  {"ggml_mxfp4", {64,96}, 3264, 0},
  {"ggml_q4_1", {7168,2048}, 9175040, 0},
  {"ggml_q4_1", {256,512}, 81920, 0},
  {"ggml_q4_1", {129,7168}, 577920, 0},
  {"ggml_q4_1", {1,256}, 160, 0},
  {"ggml_q4_1", {64,96}, 3840, 0},
  {"ggml_q5_0", {7168,2048}, 10092544, 0},
  {"ggml_q5_0", {256,512}, 90112, 0},
  {"ggml_q5_0", {129,7168}, 635712, 0},
  {"ggml_q5_0", {1,256}, 176, 0},
  {"ggml_q5_0", {64,96}, 4224, 0},
  {"ggml_q5_1", {7168,2048}, 11010048, 0},
  {"ggml_q5_1", {256,512}, 98304, 0},
  {"ggml_q5_1", {129,7168}, 693504, 0},
  {"ggml_q5_1", {1,256}, 192, 0},
  {"ggml_q5_1", {64,96}, 4608, 0},
  {"ggml_q2_k", {7168,2048}, 4816896, 0},
  {"ggml_q2_k", {256,512}, 43008, 0},
  {"ggml_q2_k", {129,7168}, 303408, 0},
  {"ggml_q2_k", {1,256}, 84, 0},
  {"ggml_q3_k", {7168,2048}, 6307840, 0},
  {"ggml_q3_k", {256,512}, 56320, 0},
  {"ggml_q3_k", {129,7168}, 397320, 0},
  {"ggml_q3_k", {1,256}, 110, 0},
  {"ggml_q4_k", {7168,2048}, 8257536, 0},
  {"ggml_q4_k", {256,512}, 73728, 0},
  {"ggml_q4_k", {129,7168}, 520128, 0},
  {"ggml_q4_k", {1,256}, 144, 0},
  {"ggml_q5_k", {7168,2048}, 10092544, 0},
  {"ggml_q5_k", {256,512}, 90112, 0},
  {"ggml_q5_k", {129,7168}, 635712, 0},
  {"ggml_q5_k", {1,256}, 176, 0},
  {"ggml_q6_k", {7168,2048}, 12042240, 0},
  {"ggml_q6_k", {256,512}, 107520, 0},
  {"ggml_q6_k", {129,7168}, 758520, 0},
  {"ggml_q6_k", {1,256}, 210, 0},
  {"vq3r_b32", {7168,2048}, 5505024, 917504},
  {"vq3r_b32", {256,512}, 49152, 8192},
  {"vq3r_b32", {129,7168}, 346752, 57792},
  {"vq3r_b32", {1,256}, 96, 16},
  {"vq3r_b32", {64,96}, 2304, 384},
  // Added after the table (issue 46): one f32 scale per 32x32 tile, partial tiles counted.
  {"f8_e4m3_b32", {7168,2048}, 14680064, 57344},
  {"f8_e4m3_b32", {256,512}, 131072, 512},
  {"f8_e4m3_b32", {130,3}, 390, 20},
  {"f8_e4m3_b32", {129,7168}, 924672, 4480},
  {"f8_e4m3_b32", {1,256}, 256, 32},
  {"f8_e4m3_b32", {64,96}, 6144, 24},
  {"f8_e4m3_b32", {40,70}, 2800, 24},
};

TEST(TensorFormatTest, BytesAreThoseOfTheSwitchesBeforeTheTable) {
  for (const Sizes& s : kSizes) {
    const std::optional<TensorFormat> format = ParseTensorFormat(s.format);
    ASSERT_TRUE(format.has_value()) << s.format;
    ASSERT_EQ(ShapeProblem(*format, s.shape), "") << s.format;
    EXPECT_EQ(DataBytes(*format, s.shape), s.data_bytes) << s.format << " " << s.shape.size();
    EXPECT_EQ(ScaleBytes(*format, s.shape), s.scale_bytes) << s.format << " " << s.shape.size();
  }
}

struct Problem {
  std::string_view format;
  std::vector<uint64_t> shape;
  std::string_view problem;
};

const Problem kProblems[] = {
    {"f8_e4m3_b128", {5}, "f8_e4m3_b128 needs a 2-D shape"},
    {"f8_e4m3_b128", {3,1,4}, "f8_e4m3_b128 needs a 2-D shape"},
    {"f8_e4m3_b32", {5}, "f8_e4m3_b32 needs a 2-D shape"},
    {"f8_e4m3_b32", {3,1,4}, "f8_e4m3_b32 needs a 2-D shape"},
    {"q8_b32", {130,3}, "q8_b32 needs columns divisible by 32, has 3"},
    {"q8_b32", {5}, "q8_b32 needs a 2-D shape"},
    {"q8_b32", {3,1,4}, "q8_b32 needs a 2-D shape"},
    {"q4_b32", {130,3}, "q4_b32 needs columns divisible by 32, has 3"},
    {"q4_b32", {5}, "q4_b32 needs a 2-D shape"},
    {"q4_b32", {3,1,4}, "q4_b32 needs a 2-D shape"},
    {"mxfp4_b32", {130,3}, "mxfp4_b32 needs columns divisible by 32, has 3"},
    {"mxfp4_b32", {5}, "mxfp4_b32 needs a 2-D shape"},
    {"mxfp4_b32", {3,1,4}, "mxfp4_b32 needs a 2-D shape"},
    {"ggml_q8_0", {130,3}, "ggml_q8_0 needs columns divisible by 32, has 3"},
    {"ggml_q8_0", {5}, "ggml_q8_0 needs a 2-D shape"},
    {"ggml_q8_0", {3,1,4}, "ggml_q8_0 needs a 2-D shape"},
    {"ggml_q4_0", {130,3}, "ggml_q4_0 needs columns divisible by 32, has 3"},
    {"ggml_q4_0", {5}, "ggml_q4_0 needs a 2-D shape"},
    {"ggml_q4_0", {3,1,4}, "ggml_q4_0 needs a 2-D shape"},
    {"ggml_mxfp4", {130,3}, "ggml_mxfp4 needs columns divisible by 32, has 3"},
    {"ggml_mxfp4", {5}, "ggml_mxfp4 needs a 2-D shape"},
    {"ggml_mxfp4", {3,1,4}, "ggml_mxfp4 needs a 2-D shape"},
    {"ggml_q4_1", {130,3}, "ggml_q4_1 needs columns divisible by 32, has 3"},
    {"ggml_q4_1", {5}, "ggml_q4_1 needs a 2-D shape"},
    {"ggml_q4_1", {3,1,4}, "ggml_q4_1 needs a 2-D shape"},
    {"ggml_q5_0", {130,3}, "ggml_q5_0 needs columns divisible by 32, has 3"},
    {"ggml_q5_0", {5}, "ggml_q5_0 needs a 2-D shape"},
    {"ggml_q5_0", {3,1,4}, "ggml_q5_0 needs a 2-D shape"},
    {"ggml_q5_1", {130,3}, "ggml_q5_1 needs columns divisible by 32, has 3"},
    {"ggml_q5_1", {5}, "ggml_q5_1 needs a 2-D shape"},
    {"ggml_q5_1", {3,1,4}, "ggml_q5_1 needs a 2-D shape"},
    {"ggml_q2_k", {130,3}, "ggml_q2_k needs columns divisible by 256, has 3"},
    {"ggml_q2_k", {5}, "ggml_q2_k needs a 2-D shape"},
    {"ggml_q2_k", {3,1,4}, "ggml_q2_k needs a 2-D shape"},
    {"ggml_q2_k", {64,96}, "ggml_q2_k needs columns divisible by 256, has 96"},
    {"ggml_q3_k", {130,3}, "ggml_q3_k needs columns divisible by 256, has 3"},
    {"ggml_q3_k", {5}, "ggml_q3_k needs a 2-D shape"},
    {"ggml_q3_k", {3,1,4}, "ggml_q3_k needs a 2-D shape"},
    {"ggml_q3_k", {64,96}, "ggml_q3_k needs columns divisible by 256, has 96"},
    {"ggml_q4_k", {130,3}, "ggml_q4_k needs columns divisible by 256, has 3"},
    {"ggml_q4_k", {5}, "ggml_q4_k needs a 2-D shape"},
    {"ggml_q4_k", {3,1,4}, "ggml_q4_k needs a 2-D shape"},
    {"ggml_q4_k", {64,96}, "ggml_q4_k needs columns divisible by 256, has 96"},
    {"ggml_q5_k", {130,3}, "ggml_q5_k needs columns divisible by 256, has 3"},
    {"ggml_q5_k", {5}, "ggml_q5_k needs a 2-D shape"},
    {"ggml_q5_k", {3,1,4}, "ggml_q5_k needs a 2-D shape"},
    {"ggml_q5_k", {64,96}, "ggml_q5_k needs columns divisible by 256, has 96"},
    {"ggml_q6_k", {130,3}, "ggml_q6_k needs columns divisible by 256, has 3"},
    {"ggml_q6_k", {5}, "ggml_q6_k needs a 2-D shape"},
    {"ggml_q6_k", {3,1,4}, "ggml_q6_k needs a 2-D shape"},
    {"ggml_q6_k", {64,96}, "ggml_q6_k needs columns divisible by 256, has 96"},
    {"vq3r_b32", {130,3}, "vq3r_b32 needs columns divisible by 32, has 3"},
    {"vq3r_b32", {5}, "vq3r_b32 needs a 2-D shape"},
    {"vq3r_b32", {3,1,4}, "vq3r_b32 needs a 2-D shape"},
    {"f32", {}, "shape must have 1 to 4 dimensions, has 0"},
    {"q8_b32", {2, 0}, "shape has a zero dimension"},
};

TEST(TensorFormatTest, ShapeProblemsAreThoseOfTheSwitchesBeforeTheTable) {
  for (const Problem& p : kProblems) {
    const std::optional<TensorFormat> format = ParseTensorFormat(p.format);
    ASSERT_TRUE(format.has_value()) << p.format;
    EXPECT_EQ(ShapeProblem(*format, p.shape), p.problem) << p.format;
  }
}

TEST(TensorFormatTest, EveryFormatHasOneRowAndItsNameRoundTrips) {
  ASSERT_EQ(std::size(kFormatTraits), kNumTensorFormats);
  for (size_t i = 0; i < kNumTensorFormats; ++i) {
    const auto format = static_cast<TensorFormat>(i);
    EXPECT_EQ(&TraitsOf(format), &kFormatTraits[i]);
    EXPECT_EQ(TraitsOf(format).format, format);
    EXPECT_EQ(ParseTensorFormat(TensorFormatName(format)), format) << i;
  }
  EXPECT_EQ(TensorFormatName(static_cast<TensorFormat>(kNumTensorFormats)), "unknown");
}

TEST(TensorFormatTest, VisitFormatPassesTheFormatAsAConstant) {
  for (const FormatTraits& traits : kFormatTraits) {
    const uint64_t block_bytes = VisitFormat(traits.format, []<TensorFormat kFormat>() {
      constexpr uint64_t kBytes = TraitsOf(kFormat).block_bytes;  // a compile-time constant
      return kBytes;
    });
    EXPECT_EQ(block_bytes, traits.block_bytes) << traits.name;
  }
}

TEST(TensorFormatTest, NamesRoundTrip) {
  EXPECT_EQ(TensorFormatName(TensorFormat::kQ4B32), "q4_b32");
  EXPECT_EQ(ParseTensorFormat("ggml_q6_k"), TensorFormat::kGgmlQ6_K);
  EXPECT_EQ(ParseTensorFormat("q4"), std::nullopt);
}

TEST(TensorFormatTest, FlagsAreThoseOfTheSwitchesBeforeTheTable) {
  EXPECT_TRUE(HasScale(TensorFormat::kF8E4M3B128));
  EXPECT_TRUE(HasScale(TensorFormat::kF8E4M3B32));
  EXPECT_TRUE(HasScale(TensorFormat::kVq3rB32));
  EXPECT_FALSE(HasScale(TensorFormat::kGgmlQ4_0));
  EXPECT_FALSE(HasScale(TensorFormat::kBF16));
  EXPECT_TRUE(NeedsCodebook(TensorFormat::kVq3rB32));
  EXPECT_FALSE(NeedsCodebook(TensorFormat::kQ4B32));
  EXPECT_EQ(GgmlBlockLayoutOf(TensorFormat::kQ4B32), std::nullopt);
  ASSERT_TRUE(GgmlBlockLayoutOf(TensorFormat::kGgmlQ3_K).has_value());
  EXPECT_EQ(GgmlBlockLayoutOf(TensorFormat::kGgmlQ3_K)->elements, 256u);
  EXPECT_EQ(GgmlBlockLayoutOf(TensorFormat::kGgmlQ3_K)->bytes, 110u);
}

// The FP8 formats by their scales' tile edge: what the converter keeps a
// release's F8_E4M3 tensor as, by the grid of its block scales.
TEST(TensorFormatTest, TiledFp8FormatsByTheirTileEdge) {
  EXPECT_EQ(TiledFp8Format(128), TensorFormat::kF8E4M3B128);
  EXPECT_EQ(TiledFp8Format(32), TensorFormat::kF8E4M3B32);
  EXPECT_EQ(TiledFp8Format(64), std::nullopt);
  EXPECT_TRUE(IsTiledFp8(TensorFormat::kF8E4M3B32));
  EXPECT_FALSE(IsTiledFp8(TensorFormat::kQ8B32));
  EXPECT_EQ(TraitsOf(TensorFormat::kF8E4M3B32).scale.type, ScaleType::kF32);
}

}  // namespace
}  // namespace warp
