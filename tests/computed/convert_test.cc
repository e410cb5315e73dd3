// computed convert: what it refuses, and how it names the problem.

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/format/container.h"
#include "computed/convert/converter.h"
#include "computed/convert/safetensors.h"
#include "computed/model/family.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/run_command.h"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

using ::warp::testing::FixtureDir;

// A writable copy of a fixture checkpoint, to damage.
class ConvertTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::copy(FixtureDir("qwen3_moe_f32"), hf_, fs::copy_options::recursive); }

  absl::Status Convert(const ConvertOptions& options = {}) {
    return ConvertCheckpoint(hf_, dir_ / "out.warp", options).status();
  }

  void EditConfig(const std::function<void(json&)>& edit) {
    std::ifstream in(hf_ / "config.json");
    json config = json::parse(in);
    edit(config);
    std::ofstream(hf_ / "config.json") << config.dump(2);
  }

  // Each edit, on the fixture's config.json as it was, must be refused with
  // InvalidArgument naming `error`.
  void ExpectEachEditRefused(
      const std::vector<std::pair<std::function<void(json&)>, std::string>>& cases) {
    std::ifstream in(hf_ / "config.json");
    const std::string original((std::istreambuf_iterator<char>(in)), {});
    for (const auto& [edit, error] : cases) {
      SCOPED_TRACE(error);
      std::ofstream(hf_ / "config.json") << original;
      EditConfig(edit);
      EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(error)));
    }
  }

  // model.safetensors' JSON header, and the stream after it.
  static std::string ReadHeader(std::istream& in) {
    uint64_t n = 0;
    in.read(reinterpret_cast<char*>(&n), 8);
    std::string header(n, '\0');
    in.read(header.data(), static_cast<std::streamsize>(n));
    return header;
  }

  // Rewrites model.safetensors with `edit` applied to its header.
  void EditHeader(const std::function<void(json&)>& edit) {
    const fs::path path = hf_ / "model.safetensors";
    std::ifstream in(path, std::ios::binary);
    const std::string header = ReadHeader(in);
    std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    json root = json::parse(header);
    edit(root);
    std::string text = root.dump();
    text.resize((text.size() + 7) / 8 * 8, ' ');
    const uint64_t size = text.size();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&size), 8);
    out << text << data;
  }


  // Overwrites bytes [offset, offset + bytes.size()) of tensor `name`'s data.
  void PatchTensor(const std::string& name, uint64_t offset, const std::string& bytes) {
    const fs::path path = hf_ / "model.safetensors";
    std::ifstream in(path, std::ios::binary);
    const std::string header = ReadHeader(in);
    in.close();
    const uint64_t begin = json::parse(header)[name]["data_offsets"][0].get<uint64_t>();
    std::fstream out(path, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(8 + header.size() + begin + offset));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  static std::string ReadFile(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
  }

  warp::testing::TempDir dir_;
  fs::path hf_ = dir_ / "hf";
};

TEST_F(ConvertTest, ConvertsAndOpens) {
  WARP_ASSERT_OK(Convert());
  WARP_EXPECT_OK(Container::Open(dir_ / "out.warp"));
}

// The release's tokenizer files are copied; the chat template inside
// tokenizer_config.json becomes chat_template.jinja, named by the manifest.
TEST_F(ConvertTest, CopiesTokenizerFilesAndWritesTheChatTemplateOut) {
  const std::string chat_template = "{% for m in messages %}{{ m['content'] }}{% endfor %}";
  std::ofstream(hf_ / "tokenizer.json") << "{}";
  std::ofstream(hf_ / "generation_config.json") << R"({"eos_token_id": [1, 2]})";
  std::ofstream(hf_ / "tokenizer_config.json")
      << json(
             {{"bos_token", "<s>"},
              {"chat_template", json::array({{{"name", "tool_use"}, {"template", "x"}},
                                             {{"name", "default"}, {"template", chat_template}}})}})
             .dump();
  WARP_ASSERT_OK(Convert());
  auto container = Container::Open(dir_ / "out.warp");
  WARP_ASSERT_OK(container);
  const auto& tokenizer = (*container)->manifest().tokenizer;
  ASSERT_TRUE(tokenizer.has_value());
  EXPECT_THAT(tokenizer->files, ::testing::ElementsAre("tokenizer.json", "tokenizer_config.json",
                                                       "generation_config.json"));
  EXPECT_EQ(tokenizer->chat_template, "chat_template.jinja");
  std::ifstream in(dir_ / "out.warp" / "chat_template.jinja");
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), chat_template);
}

TEST_F(ConvertTest, ATokenizerConfigThatIsNotAnObjectIsRefusedNamingTheFile) {
  std::ofstream(hf_ / "tokenizer_config.json") << "[1, 2]";
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("tokenizer_config.json: not a JSON object")));
}

TEST_F(ConvertTest, AChatTemplateOfTheWrongTypeIsRefusedNamingTheFile) {
  std::ofstream(hf_ / "tokenizer_config.json") << R"({"chat_template": 42})";
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("tokenizer_config.json"),
                                        HasSubstr("chat_template: expected a string"))));
}

TEST_F(ConvertTest, TruncatedSafetensorsIsRefusedNamingTheFile) {
  fs::resize_file(hf_ / "model.safetensors", fs::file_size(hf_ / "model.safetensors") - 1000);
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kDataLoss,
                                  AllOf(HasSubstr("model.safetensors"),
                                        HasSubstr("run past the end of the file"))));
}

TEST_F(ConvertTest, TruncatedHeaderIsRefused) {
  fs::resize_file(hf_ / "model.safetensors", 100);
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kDataLoss,
                                  AllOf(HasSubstr("model.safetensors"), HasSubstr("header"))));
}

TEST_F(ConvertTest, HeaderOffsetsPastTheFileAreRefusedNamingTheTensor) {
  EditHeader([](json& root) {
    root["model.norm.weight"]["data_offsets"] = {uint64_t{1} << 40, (uint64_t{1} << 40) + 256};
  });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kDataLoss, AllOf(HasSubstr("tensor model.norm.weight"),
                                                          HasSubstr("run past the end"))));
}

// A shape whose byte size wraps past 2^64 (2^61 I64 values need 2^64 bytes,
// which wrapped to 0) matched empty data and was accepted.
TEST_F(ConvertTest, AShapeWhoseSizeWrapsIsRefusedNamingTheTensor) {
  EditHeader([](json& root) {
    root["model.norm.weight"]["dtype"] = "I64";
    root["model.norm.weight"]["shape"] = {uint64_t{1} << 61};
    const uint64_t begin = root["model.norm.weight"]["data_offsets"][0];
    root["model.norm.weight"]["data_offsets"] = {begin, begin};
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("tensor model.norm.weight"),
                                        HasSubstr("needs more than 2^64 bytes"))));
}

TEST_F(ConvertTest, UnsupportedDtypeIsRefusedByName) {
  EditHeader([](json& root) { root["model.norm.weight"]["dtype"] = "F64"; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("model.norm.weight"),
                                        HasSubstr("dtype F64 is not supported"))));
}

TEST_F(ConvertTest, ConfigMissingARequiredFieldIsRefused) {
  EditConfig([](json& config) { config.erase("num_experts"); });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("config.json"), HasSubstr("num_experts: missing"))));
}

TEST_F(ConvertTest, UnknownArchitectureIsRefused) {
  EditConfig([](json& config) { config["model_type"] = "llama"; });
  const absl::Status refused = Convert();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("architecture \"llama\" is not supported")));
  // The message lists what is supported, from the registry (aliases included).
  for (const ModelFamily* family : AllFamilies()) {
    for (std::string_view type : family->model_types()) {
      EXPECT_THAT(refused.message(), HasSubstr(std::string(type)));
    }
  }
}

TEST_F(ConvertTest, TensorWithTheWrongShapeIsRefused) {
  EditConfig([](json& config) { config["moe_intermediate_size"] = 64; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("tensor model.layers.1.mlp.experts.0.gate_proj"),
                                        HasSubstr("has shape"), HasSubstr("config.json implies"))));
}

TEST_F(ConvertTest, MissingTensorIsRefusedByName) {
  EditHeader([](json& root) { root.erase("model.layers.2.mlp.experts.3.down_proj.weight"); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kNotFound,
                                  HasSubstr("tensor model.layers.2.mlp.experts.3.down_proj.weight "
                                            "is missing from the checkpoint")));
}

TEST_F(ConvertTest, UnknownFormatOptionIsRefused) {
  EXPECT_THAT(Convert({.experts = "q3"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("--experts q3")));
}

TEST_F(ConvertTest, QuantizedFormatsConvert) {
  WARP_ASSERT_OK(ConvertCheckpoint(hf_, dir_ / "q8.warp", {.experts = "q8", .trunk = "q8"}));
  auto container = Container::Open(dir_ / "q8.warp");
  WARP_ASSERT_OK(container);
  EXPECT_EQ((*container)->manifest().banks[0].matrices[0].format, TensorFormat::kQ8B32);
  WARP_ASSERT_OK(ConvertCheckpoint(hf_, dir_ / "q4.warp", {.experts = "q4", .trunk = "bf16"}));
}

// --experts vq3r: one codebook per bank matrix in codebooks.bin, which the
// manifest names and Container::Open checks against the banks.
TEST_F(ConvertTest, Vq3rWritesTheCodebooksOfEveryBankMatrix) {
  WARP_ASSERT_OK(Convert({.experts = "vq3r"}));
  const fs::path out = dir_ / "out.warp";
  auto container = Container::Open(out);
  WARP_ASSERT_OK(container);
  const Manifest& manifest = (*container)->manifest();
  EXPECT_EQ(manifest.codebooks_file, "codebooks.bin");
  size_t matrices = 0;
  for (const BankEntry& bank : manifest.banks) {
    for (const TensorEntry& matrix : bank.matrices) {
      EXPECT_EQ(matrix.format, TensorFormat::kVq3rB32) << matrix.name;
      EXPECT_NE((*container)->codebooks().Find(bank.layer, matrix.name), nullptr)
          << "layer " << bank.layer << " " << matrix.name;
      ++matrices;
    }
  }
  EXPECT_EQ((*container)->codebooks().size(), matrices);
}

TEST_F(ConvertTest, Vq3rCodebooksThatAreMissingDamagedOrMismatchedAreRefused) {
  WARP_ASSERT_OK(Convert({.experts = "vq3r"}));
  const fs::path out = dir_ / "out.warp", file = out / "codebooks.bin";
  auto container = Container::Open(out);
  WARP_ASSERT_OK(container);
  const std::vector<BankEntry> banks = (*container)->manifest().banks;
  const Codebooks books = (*container)->codebooks();
  container->reset();
  const auto write = [](const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  const std::string original = books.Serialize();

  fs::remove(file);
  EXPECT_THAT(Container::Open(out),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("codebooks.bin")));

  std::string flipped = original;
  flipped[100] ^= 0x40;
  write(file, flipped);
  EXPECT_THAT(Container::Open(out),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("codebooks.bin"), HasSubstr("CRC32C"))));

  // The last bank's down_proj left out; then a codebook for a layer with no bank.
  Codebooks fewer, more = books;
  for (const BankEntry& bank : banks) {
    for (const TensorEntry& matrix : bank.matrices) {
      if (&bank == &banks.back() && matrix.name == "down_proj") continue;
      fewer.Add(bank.layer, matrix.name, *books.Find(bank.layer, matrix.name));
    }
  }
  write(file, fewer.Serialize());
  EXPECT_THAT(Container::Open(out),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(absl::StrCat("no codebook for layer ", banks.back().layer,
                                              " down_proj (vq3r_b32)"))));
  more.Add(99, "gate_proj", *books.Find(banks[0].layer, "gate_proj"));
  write(file, more.Serialize());
  EXPECT_THAT(Container::Open(out),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr(absl::StrCat(books.size() + 1, " codebooks for the manifest's ",
                                              books.size()))));

  // A manifest that names no codebooks for vq3r_b32 matrices.
  write(file, original);
  WARP_ASSERT_OK(Container::Open(out).status());
  std::ifstream in(out / "manifest.json");
  json manifest = json::parse(in);
  manifest["codebooks"] = nullptr;
  write(out / "manifest.json", manifest.dump(1));
  EXPECT_THAT(Container::Open(out),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("manifest.json"), HasSubstr("vq3r_b32"),
                             HasSubstr("names no codebooks"))));
}

// A vq3r codebook needs vectors to fit: a matrix that is zero in every
// expert sampled is refused naming the layer and matrix.
TEST_F(ConvertTest, Vq3rOfAnAllZeroMatrixIsRefusedNamingIt) {
  const fs::path path = hf_ / "model.safetensors";
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  const std::string header = ReadHeader(file);
  const json tensors = json::parse(header);
  for (const auto& [name, tensor] : tensors.items()) {
    if (name.find("layers.1.mlp.experts.") == std::string::npos ||
        name.find(".gate_proj.") == std::string::npos) {
      continue;
    }
    const uint64_t begin = tensor["data_offsets"][0], end = tensor["data_offsets"][1];
    file.seekp(static_cast<std::streamoff>(8 + header.size() + begin));
    const std::string zeros(end - begin, '\0');
    file.write(zeros.data(), static_cast<std::streamsize>(zeros.size()));
  }
  file.close();
  EXPECT_THAT(Convert({.experts = "vq3r"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("layer 1 gate_proj"), HasSubstr("zero or not finite"))));
}

// gpt-oss as released: MXFP4 expert blocks and E8M0 scales in U8 tensors.
class GptOssConvertTest : public ConvertTest {
 protected:
  void SetUp() override { fs::copy(FixtureDir("gpt_oss_mxfp4"), hf_, fs::copy_options::recursive); }
};

TEST_F(GptOssConvertTest, NativeKeepsTheReleaseBlocksBitForBit) {
  WARP_ASSERT_OK(Convert());
  auto container = Container::Open(dir_ / "out.warp");
  WARP_ASSERT_OK(container);
  const BankEntry& bank = (*container)->manifest().banks[1];
  ASSERT_EQ(bank.matrices[0].name, "gate_up_proj");
  EXPECT_EQ(bank.matrices[0].format, TensorFormat::kMxfp4B32);
  EXPECT_EQ(bank.matrices[1].format, TensorFormat::kF32);  // gate_up_proj_bias
  auto checkpoint = Checkpoint::Open(hf_);
  WARP_ASSERT_OK(checkpoint);
  const SourceTensor* blocks =
      (*checkpoint)->Find("model.layers.1.mlp.experts.gate_up_proj_blocks");
  const SourceTensor* scales =
      (*checkpoint)->Find("model.layers.1.mlp.experts.gate_up_proj_scales");
  ASSERT_NE(blocks, nullptr);
  ASSERT_NE(scales, nullptr);
  const uint32_t expert = 5;
  const TensorEntry& matrix = bank.matrices[0];
  std::vector<std::byte> want_data(matrix.data.bytes), want_scale(matrix.scale->bytes);
  WARP_ASSERT_OK((*checkpoint)->Read(*blocks, expert * want_data.size(), want_data));
  WARP_ASSERT_OK((*checkpoint)->Read(*scales, expert * want_scale.size(), want_scale));
  std::ifstream bank_file((*container)->dir() / bank.file, std::ios::binary);
  std::vector<std::byte> record(bank.record_bytes);
  bank_file.seekg(static_cast<std::streamoff>(expert * bank.record_bytes));
  bank_file.read(reinterpret_cast<char*>(record.data()),
                 static_cast<std::streamsize>(record.size()));
  EXPECT_TRUE(std::equal(want_data.begin(), want_data.end(), record.begin() + matrix.data.offset));
  EXPECT_TRUE(
      std::equal(want_scale.begin(), want_scale.end(), record.begin() + matrix.scale->offset));
}

TEST_F(GptOssConvertTest, Q8Q4AndVq3rAreEncodedFromTheMxfp4Values) {
  for (const char* experts : {"q8", "q4", "vq3r"}) {
    WARP_ASSERT_OK(ConvertCheckpoint(hf_, dir_ / experts, {.experts = experts}));
    auto container = Container::Open(dir_ / experts);
    WARP_ASSERT_OK(container);
    const std::vector<TensorEntry>& matrices = (*container)->manifest().banks[0].matrices;
    EXPECT_EQ(std::string(TensorFormatName(matrices[0].format)),
              std::string(experts) == "vq3r" ? "vq3r_b32" : absl::StrCat(experts, "_b32"));
    EXPECT_EQ(matrices[1].format, TensorFormat::kF32);  // gate_up_proj_bias stays a vector
  }
}

TEST_F(GptOssConvertTest, BlocksThatDisagreeWithTheirScalesAreRefusedNamingBoth) {
  EditHeader([](json& root) {
    root["model.layers.0.mlp.experts.down_proj_scales"]["shape"] = {16, 128, 1};
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("model.layers.0.mlp.experts.down_proj_scales"),
                                        HasSubstr("disagrees with its blocks"),
                                        HasSubstr("down_proj_blocks"))));
}

TEST_F(GptOssConvertTest, ScalesOfTheWrongDtypeAreRefusedNamingTheTensor) {
  EditHeader([](json& root) {
    root["model.layers.2.mlp.experts.gate_up_proj_scales"]["dtype"] = "F8_E4M3";
  });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor model.layers.2.mlp.experts.gate_up_proj_scales"),
                             HasSubstr("is F8_E4M3"), HasSubstr("must be U8"))));
}

TEST_F(GptOssConvertTest, AnUnknownLayerTypeIsRefusedNamingTheEntry) {
  EditConfig([](json& config) { config["layer_types"][1] = "chunked_attention"; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("config.json: layer_types[1]"),
                                        HasSubstr("\"chunked_attention\""))));
}

TEST_F(GptOssConvertTest, LayerTypesOfTheWrongLengthAreRefused) {
  EditConfig([](json& config) { config["layer_types"].erase(0); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("layer_types: must be an array of num_hidden_layers")));
}

TEST_F(GptOssConvertTest, BlocksWithoutTheirScalesAreRefusedNamingBoth) {
  EditHeader([](json& root) { root.erase("model.layers.1.mlp.experts.down_proj_scales"); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kNotFound,
                                  AllOf(HasSubstr("model.layers.1.mlp.experts.down_proj_blocks"),
                                        HasSubstr("model.layers.1.mlp.experts.down_proj_scales"),
                                        HasSubstr("missing"))));
}

TEST_F(GptOssConvertTest, SlidingLayersWithoutAWindowAreRefused) {
  EditConfig([](json& config) { config["sliding_window"] = 0; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("config.json: sliding_window: must be positive")));
}

TEST_F(GptOssConvertTest, ANonPositiveSwigluLimitIsRefused) {
  EditConfig([](json& config) { config["swiglu_limit"] = 0.0; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("config.json: swiglu_limit: must be positive")));
}

TEST_F(GptOssConvertTest, EitherSpellingOfTheTopKIsReadAndNeitherIsRefused) {
  EditConfig([](json& config) { config.erase("num_experts_per_tok"); });
  WARP_EXPECT_OK(Convert());  // the release's older experts_per_token
  EditConfig([](json& config) { config.erase("experts_per_token"); });
  EXPECT_THAT(
      Convert(),
      StatusIs(
          absl::StatusCode::kInvalidArgument,
          HasSubstr("num_experts_per_tok or experts_per_token or num_experts_per_token: missing")));
}

// Kimi-Linear as released: KDA and NoPE MLA layers chosen by 1-based lists.
class KimiLinearConvertTest : public ConvertTest {
 protected:
  void SetUp() override {
    fs::copy(FixtureDir("kimi_linear_bf16"), hf_, fs::copy_options::recursive);
  }
};

TEST_F(KimiLinearConvertTest, AMissingLinearAttnConfigIsRefused) {
  WARP_ASSERT_OK(Convert());
  EditConfig([](json& config) { config.erase("linear_attn_config"); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("config.json: linear_attn_config: missing")));
}

TEST_F(KimiLinearConvertTest, ALayerNumberOutOfRangeIsRefusedNamingTheList) {
  EditConfig([](json& config) {
    const uint32_t layers = config["num_hidden_layers"];
    config["linear_attn_config"]["kda_layers"].push_back(layers + 1);
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("config.json: linear_attn_config.kda_layers"),
                                        HasSubstr("is not a layer (1-based"))));
  EditConfig([](json& config) {
    config["linear_attn_config"]["kda_layers"].erase(
        config["linear_attn_config"]["kda_layers"].size() - 1);
    config["linear_attn_config"]["full_attn_layers"] = {0};
  });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("linear_attn_config.full_attn_layers: 0 is not a layer")));
}

TEST_F(KimiLinearConvertTest, AMalformedLinearAttnConfigIsRefusedNamingTheKey) {
  ExpectEachEditRefused({
      {[](json& c) { c["linear_attn_config"]["kda_layers"] = 3; },
       "config.json: linear_attn_config.kda_layers: must be an array of 1-based layer numbers"},
      {[](json& c) { c["linear_attn_config"]["gate_lower_bound"] = 5.0; },
       "config.json: linear_attn_config.gate_lower_bound: must be negative"},
  });
}

TEST_F(KimiLinearConvertTest, ALayerInBothListsIsRefused) {
  EditConfig([](json& config) { config["linear_attn_config"]["kda_layers"].push_back(4); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("layer 4 is in both kda_layers and full_attn_layers")));
}

TEST_F(KimiLinearConvertTest, AConvWeightOfTheWrongShapeIsRefusedNamingTheTensor) {
  EditHeader([](json& root) {
    json& conv = root["model.layers.1.self_attn.k_conv1d.weight"];
    conv["shape"] = {conv["shape"][0].get<uint64_t>() * 4, 1, 1};
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("model.layers.1.self_attn.k_conv1d.weight"),
                                        HasSubstr("config.json implies"))));
}

TEST_F(KimiLinearConvertTest, ASoftmaxRouterIsRefused) {
  EditConfig([](json& config) { config["moe_router_activation_func"] = "softmax"; });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("moe_router_activation_func: \"softmax\" is not supported")));
}

// Kimi K3 as released: the text model under text_config, experts as
// compressed-tensors MXFP4 weight_packed / weight_scale.
class KimiK3ConvertTest : public ConvertTest {
 protected:
  void SetUp() override { fs::copy(FixtureDir("kimi_k3_mxfp4"), hf_, fs::copy_options::recursive); }
};

TEST_F(KimiK3ConvertTest, PackedExpertsAreKeptAsTheyAre) {
  WARP_ASSERT_OK(Convert());
  auto container = Container::Open(dir_ / "out.warp");
  WARP_ASSERT_OK(container);
  for (const TensorEntry& matrix : (*container)->manifest().banks[0].matrices) {
    EXPECT_EQ(matrix.format, TensorFormat::kMxfp4B32) << matrix.name;
  }
}

// A_log as llama.cpp's converter and the transformers draft write it, one
// entry per head, and as the release holds it, zero-padded to the head
// dimension (the fixture: 4 heads in 16 entries), make the same trunk.
TEST_F(KimiK3ConvertTest, AnALogOfOneEntryPerHeadMakesTheSameTrunkAsThePaddedOne) {
  WARP_ASSERT_OK(Convert());
  EditHeader([](json& root) {
    for (auto& [name, tensor] : root.items()) {
      if (!name.ends_with(".A_log")) continue;
      ASSERT_EQ(tensor["shape"], json::array({16}));
      tensor["shape"] = {4};  // the first 4 floats; the padding stays in the file, unnamed
      tensor["data_offsets"][1] = tensor["data_offsets"][0].get<uint64_t>() + 4 * sizeof(float);
    }
  });
  WARP_ASSERT_OK(ConvertCheckpoint(hf_, dir_ / "per_head.warp", {}));
  EXPECT_EQ(ReadFile(dir_ / "out.warp" / "trunk.bin"),
            ReadFile(dir_ / "per_head.warp" / "trunk.bin"));
}

TEST_F(KimiK3ConvertTest, AnALogWhosePaddingIsNotZeroIsRefusedNamingTheEntry) {
  const std::string a_log = "language_model.model.layers.1.self_attn.A_log";
  const float data = 0.5f;
  PatchTensor(a_log, 9 * sizeof(float), std::string(reinterpret_cast<const char*>(&data), 4));
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("tensor " + a_log + " has shape [16]"),
                                        HasSubstr("implies [4], and entry 9 past them is 0.5"))));
}

TEST_F(KimiK3ConvertTest, AnUnknownActivationOrSituWithoutItsBetaIsRefused) {
  EditConfig([](json& config) { config["text_config"]["hidden_act"] = "gelu"; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("hidden_act: \"gelu\" is not silu or situ")));
  EditConfig([](json& config) {
    config["text_config"]["hidden_act"] = "situ";
    config["text_config"].erase("activation_situ_beta");
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("activation_situ_beta: must be positive")));
}

TEST_F(KimiK3ConvertTest, AMissingTextConfigIsRefused) {
  EditConfig([](json& config) { config.erase("text_config"); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("config.json: text_config: missing")));
}

TEST_F(KimiK3ConvertTest, APackedWeightWhoseScaleCountDisagreesIsRefusedNamingBoth) {
  const std::string expert = "language_model.model.layers.2.block_sparse_moe.experts.5.w2.";
  EditHeader([&](json& root) {
    json& scale = root[expert + "weight_scale"];
    scale["shape"] = {scale["shape"][0].get<uint64_t>() / 2, scale["shape"][1].get<uint64_t>() * 2};
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr(expert + "weight_scale"),
                                        HasSubstr(expert + "weight_packed"),
                                        HasSubstr("one scale per 32 values"))));
}

TEST_F(KimiK3ConvertTest, APackedWeightWithoutItsScaleIsRefused) {
  const std::string expert = "language_model.model.layers.1.block_sparse_moe.experts.0.w1.";
  EditHeader([&](json& root) { root.erase(expert + "weight_scale"); });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr(expert + "weight_packed"), HasSubstr("missing"))));
}

// DeepSeek V4 as released: compress_ratios per layer (plus the MTP layer's),
// hash layers' tid2eid, hyper-connection tensors of hc_mult streams.
class DeepseekV4ConvertTest : public ConvertTest {
 protected:
  void SetUp() override {
    fs::copy(FixtureDir("deepseek_v4_bf16"), hf_, fs::copy_options::recursive);
  }

};

TEST_F(DeepseekV4ConvertTest, CompressRatiosOfTheWrongLengthAreRefused) {
  EditConfig([](json& config) { config["compress_ratios"] = {0, 4}; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("config.json: compress_ratios: must list every one of "
                                            "the 4 layers (has 2)")));
  EditConfig([](json& config) { config["compress_ratios"] = {0, 4, -1, 4, 0}; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("compress_ratios[2]: -1 is not a compression ratio")));
}

TEST_F(DeepseekV4ConvertTest, ATid2eidOfTheWrongShapeIsRefusedNamingIt) {
  EditHeader([](json& root) { root["layers.0.ffn.gate.tid2eid"]["shape"] = {128, 4}; });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tensor layers.0.ffn.gate.tid2eid has shape [128, 4]"),
                             HasSubstr("config.json implies [256, 2]"))));
}

TEST_F(DeepseekV4ConvertTest, AnExpertIdOutOfRangeIsRefusedWhenTheModelOpens) {
  const int64_t bad = 8;  // the fixture has 8 routed experts: ids 0 .. 7
  PatchTensor("layers.1.ffn.gate.tid2eid", (17 * 2 + 1) * 8,
              std::string(reinterpret_cast<const char*>(&bad), 8));
  WARP_ASSERT_OK(Convert());
  auto run = warp::testing::RunBinary(
      "computed", "--log-level warn run --ids " + (dir_ / "out.warp").string() + " 1,2 -n 1");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_THAT(run.output, HasSubstr("trunk tensor layers.1.ffn.gate.tid2eid: token 17 routes to "
                                    "expert 8, outside the 8 routed experts"));
}

TEST_F(DeepseekV4ConvertTest, AnotherScoringFunctionOrUnevenOutputGroupsAreRefused) {
  EditConfig([](json& config) { config["scoring_func"] = "softmax"; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("scoring_func: \"softmax\" is not supported")));
  EditConfig([](json& config) {
    config["scoring_func"] = "sqrtsoftplus";
    config["o_groups"] = 3;
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("o_groups: must divide num_attention_heads")));
}

TEST_F(DeepseekV4ConvertTest, MalformedLayerListsAndHeadShapesAreRefusedNamingTheKey) {
  ExpectEachEditRefused({
      {[](json& c) { c.erase("compress_ratios"); },
       "config.json: compress_ratios: missing (and no layer_types)"},
      {[](json& c) {
         c["layer_types"] = {"sliding_attention", "compressed_sparse_attention", "full_attention",
                             "sliding_attention"};
       },
       "config.json: layer_types[2]: \"full_attention\" is not an attention type"},
      {[](json& c) {
         c["mlp_layer_types"] = {"hash_moe", "moe"};
       },
       "config.json: mlp_layer_types: must list the 4 layers"},
      {[](json& c) {
         c["mlp_layer_types"] = {"hash_moe", "dense", "moe", "moe"};
       },
       "config.json: mlp_layer_types[1]: \"dense\" is not \"hash_moe\" or \"moe\""},
      {[](json& c) { c["qk_rope_head_dim"] = 15; },
       "config.json: qk_rope_head_dim: must be even and at most head_dim"},
      {[](json& c) { c["index_head_dim"] = 8; },
       "config.json: index_head_dim: must hold the rope dims (qk_rope_head_dim)"},
  });
}

TEST_F(DeepseekV4ConvertTest, HyperConnectionTensorsOfAnotherHcMultAreRefused) {
  EditConfig([](json& config) { config["hc_mult"] = 2; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  AllOf(HasSubstr("tensor layers.0.hc_attn_fn has shape [24, 256]"),
                                        HasSubstr("config.json implies [8, 128]"))));
}

TEST_F(DeepseekV4ConvertTest, TheMtpLayerIsSkippedWithALogLine) {
  auto result = warp::testing::RunBinary(
      "computed", "convert --quiet " + hf_.string() + " " + (dir_ / "mtp.warp").string());
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output,
              ::testing::ContainsRegex("skipped the [0-9]+ tensors of the MTP layer"));
}

// GLM-5.3-Flash as released: text_config, explicit 0-based layer_types, a pooled DSA indexer.
class Glm5NextConvertTest : public ConvertTest {
 protected:
  void SetUp() override {
    fs::copy(FixtureDir("glm5_next_bf16"), hf_, fs::copy_options::recursive);
  }
};

TEST_F(Glm5NextConvertTest, LayerTypesOfTheWrongLengthOrKindAreRefused) {
  WARP_ASSERT_OK(Convert());
  EditConfig([](json& config) { config["text_config"]["layer_types"].erase(0); });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("config.json: layer_types: must list the 5 layers")));
  EditConfig([](json& config) {
    config["text_config"]["layer_types"].insert(config["text_config"]["layer_types"].begin(),
                                                "sliding_attention");
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("layer_types[0]: \"sliding_attention\" is not")));
}

TEST_F(Glm5NextConvertTest, AGateLowerBoundAboveZeroIsRefused) {
  EditConfig(
      [](json& config) { config["text_config"]["linear_attn_config"]["gate_lower_bound"] = 5.0; });
  EXPECT_THAT(
      Convert(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("config.json: linear_attn_config.gate_lower_bound: must be negative")));
}

TEST_F(Glm5NextConvertTest, AnUnsupportedIndexerKindIsRefusedNamingTheLayer) {
  EditConfig([](json& config) { config["text_config"]["indexer_types"][4] = "shared"; });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("indexer_types[4]: \"shared\" is not supported")));
}

TEST_F(Glm5NextConvertTest, ATopKThatIsNotWholePoolsIsRefused) {
  EditConfig([](json& config) { config["text_config"]["index_topk"] = 18; });
  EXPECT_THAT(Convert(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index_topk: must be a positive multiple of index_kpool")));
}

TEST_F(Glm5NextConvertTest, AMissingIndexerTensorIsRefusedByName) {
  EditHeader([](json& root) {
    root.erase("model.language_model.layers.2.self_attn.indexer.index_kpool_compress_gate");
  });
  EXPECT_THAT(Convert(), StatusIs(absl::StatusCode::kNotFound,
                                  HasSubstr("model.language_model.layers.2.self_attn.indexer."
                                            "index_kpool_compress_gate is missing")));
}

}  // namespace
}  // namespace warp::computed
