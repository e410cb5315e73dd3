// computed convert and DeepSeek V4.1 Flash's dense FP8 (issue 46): E4M3
// `X.weight` with E8M0 `X.scale` per 32x32 tile is kept as f8_e4m3_b32, the
// tile worked out from the shapes; its values are exactly e4m3 * 2^(s - 127);
// a tile of neither size, or not the config's, is refused naming both tensors.

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <span>

#include "common/format/container.h"
#include "common/kernels/matrix_view.h"
#include "computed/convert/converter.h"
#include "computed/convert/safetensors.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/computed/v41_fp8_layout.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;
using v41_layout::Tensor;

// Element (r, c) of F8_E4M3 `weight` with E8M0 scales `scale` of `tile`, as
// the release defines it: e4m3 * 2^(s - 127).
float ReleaseValue(const Tensor& weight, const Tensor& scale, uint64_t tile, uint64_t r,
                   uint64_t c) {
  const uint64_t cols = weight.shape[1];
  const int s = scale.bytes[(r / tile) * scale.shape[1] + c / tile];
  return kernels::E4M3ToFloat(weight.bytes[r * cols + c]) * std::ldexp(1.0f, s - 127);
}

// The format a StatusOr holds, nullopt for an error.
std::optional<TensorFormat> Kept(const absl::StatusOr<TensorFormat>& format) {
  return format.ok() ? std::optional(*format) : std::nullopt;
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

class V41Fp8ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    retiled_ = v41_layout::WriteV41Layout(warp::testing::FixtureDir("deepseek_v4_native"), hf_);
  }

  absl::Status Convert() { return ConvertCheckpoint(hf_, dir_ / "out.warp", {}).status(); }

  // Rewrites `name`'s scale tensor of the V4.1 copy with `edit`.
  void EditScale(const std::string& name, const std::function<void(Tensor&)>& edit) {
    auto tensors = v41_layout::ReadSafetensors(hf_ / "model.safetensors");
    edit(tensors.at(name.substr(0, name.size() - 7) + ".scale"));
    v41_layout::WriteSafetensors(hf_ / "model.safetensors", tensors);
  }

  warp::testing::TempDir dir_;
  fs::path hf_ = dir_ / "hf";
  std::vector<std::string> retiled_;
};

TEST_F(V41Fp8ConvertTest, DenseFp8IsKeptPer32x32TileAndDecodesExactly) {
  ASSERT_GT(retiled_.size(), 10u);
  WARP_ASSERT_OK(Convert());
  auto container = Container::Open(dir_ / "out.warp");
  WARP_ASSERT_OK(container);
  std::ifstream in((*container)->TrunkPath(), std::ios::binary);
  const std::vector<char> trunk((std::istreambuf_iterator<char>(in)), {});
  const auto tensors = v41_layout::ReadSafetensors(hf_ / "model.safetensors");
  int checked = 0;
  for (const std::string& name : retiled_) {
    const TensorEntry* entry = (*container)->manifest().FindTrunkTensor(name);
    if (entry == nullptr) continue;  // the MTP layer's, skipped
    SCOPED_TRACE(name);
    const Tensor& weight = tensors.at(name);
    const Tensor& scale = tensors.at(name.substr(0, name.size() - 7) + ".scale");
    ASSERT_EQ(entry->format, TensorFormat::kF8E4M3B32);
    ASSERT_TRUE(entry->scale.has_value());
    EXPECT_EQ(entry->scale->bytes, scale.bytes.size() * sizeof(float));  // f32 per E8M0 byte
    const kernels::MatrixView view{
        .format = entry->format,
        .rows = entry->shape[0],
        .cols = entry->shape[1],
        .data = reinterpret_cast<const std::byte*>(trunk.data() + entry->data.offset),
        .scale = reinterpret_cast<const std::byte*>(trunk.data() + entry->scale->offset)};
    std::vector<float> row(view.cols);
    for (uint64_t r = 0; r < view.rows; ++r) {
      kernels::DequantizeRow(view, r, row);
      for (uint64_t c = 0; c < view.cols; ++c) {
        ASSERT_TRUE(SameBits(row[c], ReleaseValue(weight, scale, 32, r, c)))
            << "row " << r << " col " << c << ": " << row[c];
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

// The dequantizing reader (convert --trunk q8|bf16, the experts' re-encoding)
// takes either tile from the grid.
TEST_F(V41Fp8ConvertTest, TheReaderDequantizesEitherTile) {
  auto checkpoint = Checkpoint::Open(hf_);
  WARP_ASSERT_OK(checkpoint);
  const auto tensors = v41_layout::ReadSafetensors(hf_ / "model.safetensors");
  const std::string name = retiled_.front();
  SCOPED_TRACE(name);
  const SourceTensor* weight = (*checkpoint)->Find(name);
  const SourceTensor* scale = (*checkpoint)->Find(name.substr(0, name.size() - 7) + ".scale");
  ASSERT_NE(weight, nullptr);
  ASSERT_NE(scale, nullptr);
  const uint64_t rows = weight->shape[0], cols = weight->shape[1];
  std::vector<float> values(rows * cols);
  WARP_ASSERT_OK((*checkpoint)->ReadRowsAsFloat(*weight, scale, 0, rows, values));
  for (uint64_t r = 0; r < rows; ++r) {
    for (uint64_t c = 0; c < cols; ++c) {
      ASSERT_TRUE(SameBits(values[r * cols + c],
                           ReleaseValue(tensors.at(name), tensors.at(scale->name), 32, r, c)))
          << r << ", " << c;
    }
  }
}

TEST_F(V41Fp8ConvertTest, ATileThatIsNotTheConfigsIsRefusedNamingBothTensors) {
  // wo_a [64, 128] back in 128x128 blocks: one scale, where the config says 32x32.
  EditScale("layers.0.attn.wo_a.weight", [](Tensor& scale) {
    scale.shape = {1, 1};
    scale.bytes = {127};
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("tensor layers.0.attn.wo_a.weight [64, 128] with "
                                                  "scales layers.0.attn.wo_a.scale F8_E8M0 [1, 1]"),
                                        HasSubstr("the scale tile is 128x128, but config.json's "
                                                  "quantization_config.weight_block_size says "
                                                  "32x32"))));
}

TEST_F(V41Fp8ConvertTest, AGridOfNeitherTileIsRefusedNamingBothShapes) {
  EditScale("layers.0.attn.wo_a.weight", [](Tensor& scale) {
    scale.shape = {4, 8};  // 16x16 tiles
    scale.bytes.assign(32, 127);
  });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor layers.0.attn.wo_a.weight [64, 128] with scales "
                                       "layers.0.attn.wo_a.scale F8_E8M0 [4, 8]"),
                             HasSubstr("neither 128x128 nor 32x32"),
                             HasSubstr("[1, 1] (128x128 tiles) or [2, 4] (32x32 tiles)"))));
}

// The tile from the shapes alone, and where only the config can say.
TEST(Fp8FormatOfTest, TheTileComesFromTheShapesOrTheConfig) {
  auto tensors = [](std::vector<uint64_t> shape, std::vector<uint64_t> grid) {
    return std::pair{
        SourceTensor{.name = "w.weight", .dtype = SourceDtype::kF8E4M3, .shape = std::move(shape)},
        SourceTensor{.name = "w.scale", .dtype = SourceDtype::kF8E8M0, .shape = std::move(grid)}};
  };
  const auto [v41, v41_scale] = tensors({4096, 7168}, {128, 224});
  EXPECT_EQ(Kept(Fp8FormatOf(v41, v41_scale, std::nullopt)), TensorFormat::kF8E4M3B32);
  const auto [v3, v3_scale] = tensors({4096, 7168}, {32, 56});
  EXPECT_EQ(Kept(Fp8FormatOf(v3, v3_scale, std::nullopt)), TensorFormat::kF8E4M3B128);
  EXPECT_EQ(Kept(Fp8FormatOf(v3, v3_scale, TensorFormat::kF8E4M3B128)), TensorFormat::kF8E4M3B128);
  // Rows alone tell: [33, 8] is [2, 1] in 32x32 tiles, [1, 1] in 128x128.
  const auto [tall, tall_scale] = tensors({33, 8}, {2, 1});
  EXPECT_EQ(Kept(Fp8FormatOf(tall, tall_scale, std::nullopt)), TensorFormat::kF8E4M3B32);

  // At most 32x32: one scale either way.
  const auto [small, small_scale] = tensors({32, 20}, {1, 1});
  EXPECT_THAT(Fp8FormatsOfScales(small, small_scale),
              ::testing::ElementsAre(TensorFormat::kF8E4M3B128, TensorFormat::kF8E4M3B32));
  EXPECT_EQ(Kept(Fp8FormatOf(small, small_scale, TensorFormat::kF8E4M3B32)), TensorFormat::kF8E4M3B32);
  EXPECT_EQ(Kept(Fp8FormatOf(small, small_scale, TensorFormat::kF8E4M3B128)), TensorFormat::kF8E4M3B128);
  EXPECT_THAT(Fp8FormatOf(small, small_scale, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor w.weight [32, 20] with scales w.scale F8_E8M0 [1, 1]"),
                             HasSubstr("weight_block_size"))));

  // Scales that are not F32 or E8M0 fit no tile.
  auto [bf16, bf16_scale] = tensors({4096, 7168}, {128, 224});
  bf16_scale.dtype = SourceDtype::kBF16;
  EXPECT_TRUE(Fp8FormatsOfScales(bf16, bf16_scale).empty());
  EXPECT_THAT(Fp8FormatOf(bf16, bf16_scale, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be F32 or F8_E8M0")));
}

}  // namespace
}  // namespace warp::computed
