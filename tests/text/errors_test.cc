// Malformed files and bad input give clear errors naming what and where.

#include <fstream>
#include <string>

#include "computed/text/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/testing/status_matchers.h"
#include "tests/testing/temp_dir.h"

namespace warp::text {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using warp::testing::StatusIs;
using Json = nlohmann::json;

// A small valid byte-level tokenizer.json to break in one place per test.
Json ValidTokenizer() {
  Json vocab = Json::object();
  for (const char* token : {"a", "b", "c", "ab", "abc", "\xC4\xA0",
                            "\xC4\xA0"
                            "a"}) {
    vocab[token] = vocab.size();
  }
  return {
      {"version", "1.0"},
      {"added_tokens", Json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"decoder", {{"type", "ByteLevel"}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"vocab", vocab},
        {"merges", {"a b", "ab c", "\xC4\xA0 a"}}}}};
}

class ErrorsTest : public ::testing::Test {
 protected:
  std::filesystem::path Write(const std::string& name, const std::string& content) {
    const std::filesystem::path path = dir_ / name;
    std::ofstream(path) << content;
    return path;
  }
  absl::StatusOr<std::unique_ptr<Tokenizer>> LoadJson(const Json& json) {
    return Tokenizer::Load(Write("tokenizer.json", json.dump()));
  }
  warp::testing::TempDir dir_;
};

TEST_F(ErrorsTest, TheValidBaseLoads) {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadJson(ValidTokenizer());
  WARP_ASSERT_OK(tokenizer);
  EXPECT_EQ((*tokenizer)->Encode("abc a").value(), (std::vector<int32_t>{4, 6}));
}

TEST_F(ErrorsTest, MissingFileIsNotFound) {
  EXPECT_THAT(Tokenizer::Load(dir_ / "absent.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.json")));
}

TEST_F(ErrorsTest, BadJsonNamesFileAndPosition) {
  const std::string text = ValidTokenizer().dump().substr(0, 120);
  EXPECT_THAT(
      Tokenizer::Load(Write("tokenizer.json", text)),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("tokenizer.json"), HasSubstr("malformed JSON at byte offset 120"))));
  EXPECT_THAT(
      Tokenizer::Load(Write("tokenizer.json", "{\"model\": {\"vocab\": {\"a\": 0,}}}")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed JSON at byte offset 28")));
}

TEST_F(ErrorsTest, MissingModel) {
  Json json = ValidTokenizer();
  json.erase("model");
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       AllOf(HasSubstr("tokenizer.json: model: missing"))));
}

TEST_F(ErrorsTest, MergeNamingAnUnknownToken) {
  Json json = ValidTokenizer();
  json["model"]["merges"][1] = "ab x";
  EXPECT_THAT(
      LoadJson(json),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("model.merges[1]: merge \"ab x\": token \"x\" is not in the vocab")));
  json["model"]["merges"][1] = "b c";  // both known, "bc" is not
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("token \"bc\" is not in the vocab")));
  json["model"]["merges"][1] = "abc";
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("model.merges[1]: expected \"left right\"")));
}

TEST_F(ErrorsTest, BadVocabId) {
  Json json = ValidTokenizer();
  json["model"]["vocab"]["c"] = "two";
  EXPECT_THAT(LoadJson(json),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("model.vocab.c: expected a non-negative integer")));
}

TEST_F(ErrorsTest, UnknownPreTokenizerNamesTypeAndPath) {
  Json json = ValidTokenizer();
  json["pre_tokenizer"] = {
      {"type", "Sequence"},
      {"pretokenizers", {{{"type", "Digits"}}, {{"type", "BertPreTokenizer"}}}}};
  EXPECT_THAT(LoadJson(json),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tokenizer.json: pre_tokenizer.pretokenizers[1]: unknown "
                                 "pre-tokenizer type \"BertPreTokenizer\"")));
}

TEST_F(ErrorsTest, UnknownNormalizerNamesTypeAndPath) {
  Json json = ValidTokenizer();
  json["normalizer"] = {{"type", "Sequence"},
                        {"normalizers", {{{"type", "NFC"}}, {{"type", "BertNormalizer"}}}}};
  EXPECT_THAT(LoadJson(json),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tokenizer.json: normalizer.normalizers[1]: unknown normalizer "
                                 "type \"BertNormalizer\"")));
}

TEST_F(ErrorsTest, UnknownDecoderAndPostProcessor) {
  Json json = ValidTokenizer();
  json["decoder"] = {{"type", "WordPiece"}};
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("decoder: unknown decoder type \"WordPiece\"")));
  json = ValidTokenizer();
  json["post_processor"] = {{"type", "BertProcessing"}};
  EXPECT_THAT(
      LoadJson(json),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("post_processor: unknown post-processor type \"BertProcessing\"")));
}

// The Metaspace pre-tokenizer and decoder read their options the same way,
// so both refuse an unknown prepend_scheme naming its path.
TEST_F(ErrorsTest, UnknownMetaspacePrependScheme) {
  const Json metaspace = {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}};
  Json tokenizer = ValidTokenizer();
  tokenizer["pre_tokenizer"] = metaspace;
  EXPECT_THAT(LoadJson(tokenizer),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("pre_tokenizer.prepend_scheme"),
                             HasSubstr("unknown prepend_scheme \"sometimes\""))));
  tokenizer = ValidTokenizer();
  tokenizer["decoder"] = metaspace;
  EXPECT_THAT(LoadJson(tokenizer),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("decoder.prepend_scheme"),
                             HasSubstr("unknown prepend_scheme \"sometimes\""))));
}

TEST_F(ErrorsTest, UnsupportedModelTypes) {
  for (const char* type : {"WordPiece", "Unigram", "WordLevel"}) {
    Json json = ValidTokenizer();
    json["model"]["type"] = type;
    EXPECT_THAT(LoadJson(json),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(std::string("model.type: unsupported model type \"") + type +
                                   "\" (only BPE is supported)")));
  }
}

TEST_F(ErrorsTest, DropoutMustBeNull) {
  Json json = ValidTokenizer();
  json["model"]["dropout"] = 0.1;
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("model.dropout: BPE dropout is not supported")));
}

TEST_F(ErrorsTest, BadRegexNamesPatternAndOffset) {
  Json json = ValidTokenizer();
  json["pre_tokenizer"] = {{"type", "Split"},
                           {"pattern", {{"Regex", "a(b"}}},
                           {"behavior", "Isolated"},
                           {"invert", false}};
  EXPECT_THAT(LoadJson(json),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("pre_tokenizer.pattern.Regex: regex \"a(b\""),
                             HasSubstr("at offset 3"))));
  json["pre_tokenizer"]["pattern"] = {{"Regex", "[a&&"}};
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("unterminated character class at offset 0")));
}

TEST_F(ErrorsTest, BadAddedToken) {
  Json json = ValidTokenizer();
  json["added_tokens"] = {{{"id", 7}, {"content", "<x>"}}, {{"id", -1}, {"content", "<y>"}}};
  EXPECT_THAT(LoadJson(json), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("added_tokens[1].id: expected a non-negative")));
}

TEST_F(ErrorsTest, InvalidUtf8InputNamesTheByteOffset) {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadJson(ValidTokenizer());
  WARP_ASSERT_OK(tokenizer);
  EXPECT_THAT((*tokenizer)
                  ->Encode("ab\xFF"
                           "c"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("invalid UTF-8 at byte offset 2 (byte 0xff)")));
  EXPECT_THAT((*tokenizer)->Encode("abc\xE4\xB8"),  // truncated
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 3")));
  EXPECT_THAT((*tokenizer)->Encode("a\xED\xA0\x80"),  // a surrogate
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 1")));
  EXPECT_THAT((*tokenizer)->Encode("\xC0\xAF"),  // overlong
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 0")));
}

TEST_F(ErrorsTest, OutOfRangeIdNamesIdAndVocabSize) {
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = LoadJson(ValidTokenizer());
  WARP_ASSERT_OK(tokenizer);
  EXPECT_EQ((*tokenizer)->vocab_size(), 7);
  EXPECT_THAT((*tokenizer)->Decode({0, 7}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("token id 7 is out of range (vocab size 7)")));
  EXPECT_THAT((*tokenizer)->Decode({-1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("token id -1")));
}

// All 256 single bytes, as a tiktoken file needs, but those `skip` names.
std::string ByteLines(bool (*skip)(int byte) = nullptr) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (int byte = 0; byte < 256; ++byte) {
    if (skip != nullptr && skip(byte)) continue;
    out += kAlphabet[byte >> 2];
    out += kAlphabet[(byte & 3) << 4];
    out += "== " + std::to_string(byte) + "\n";
  }
  return out;
}

TEST_F(ErrorsTest, BadTiktokenLinesNameFileAndLine) {
  EXPECT_THAT(Tokenizer::Load(Write("bad.tiktoken", ByteLines() + "YWI= 256\nnot-a-line\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad.tiktoken:258: expected \"<base64 token> <rank>\""))));
  EXPECT_THAT(Tokenizer::Load(Write("bad.tiktoken", ByteLines() + "Y*I= 256\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad.tiktoken:257: invalid base64 token \"Y*I=\"")));
  EXPECT_THAT(Tokenizer::Load(Write("bad.tiktoken", ByteLines() + "YWI= x\n")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad.tiktoken:257: invalid rank \"x\"")));
  EXPECT_THAT(
      Tokenizer::Load(Write("bad.tiktoken", "YQ== 0\nYg== 1\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no token for the byte 0x00")));
}

// The bytes valid UTF-8 never holds (C0, C1, F5..FF) need no token, as in a
// small vocabulary that gives their ids to special tokens; the others do.
TEST_F(ErrorsTest, TiktokenNeedsATokenForEachByteUtf8Holds) {
  WARP_EXPECT_OK(Tokenizer::Load(Write("utf8.tiktoken", ByteLines([](int byte) {
                                         return byte == 0xC0 || byte == 0xC1 || byte >= 0xF5;
                                       }))));
  EXPECT_THAT(
      Tokenizer::Load(Write("no_c3.tiktoken", ByteLines([](int byte) { return byte == 0xC3; }))),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("no_c3.tiktoken: no token for the byte 0xC3")));
}

TEST_F(ErrorsTest, TiktokenPatternAndSpecialTokenErrors) {
  const std::filesystem::path path = Write("ok.tiktoken", ByteLines() + "YWI= 256\n");
  WARP_EXPECT_OK(Tokenizer::Load(path));
  EXPECT_THAT(Tokenizer::Load(path, {.tiktoken_pattern = "(unclosed"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ok.tiktoken: tiktoken_pattern: regex \"(unclosed\""),
                             HasSubstr("at offset 9"))));
  EXPECT_THAT(
      Tokenizer::Load(path, {.tiktoken_special_tokens = {{"<|x|>", 97}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("special token \"<|x|>\" has id 97, which is a BPE token's rank")));
  Write("tokenizer_config.json", R"({"added_tokens_decoder": {"300": {"content": 5}}})");
  EXPECT_THAT(Tokenizer::Load(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tokenizer_config.json: added_tokens_decoder.300.content: "
                                 "expected a string")));
}

}  // namespace
}  // namespace warp::text
