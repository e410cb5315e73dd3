#include "tests/text/text_test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "computed/text/utf8.h"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"

namespace warp::text::testing {
absl::StatusOr<std::filesystem::path> NodeModulesDir() {
  absl::StatusOr<std::filesystem::path> dir = warp::testing::NodeModulesDir("tiktoken");
  if (!dir.ok()) return dir.status();
  return warp::testing::NodeModulesDir("@huggingface/tokenizers");
}

const std::vector<std::string>& TestStrings() {
  static const std::vector<std::string>* const strings = [] {
    const auto path = warp::testing::SourceDir() / "tests" / "text" / "test_strings.json";
    absl::StatusOr<std::string> text = ReadFileToString(path);
    auto* list = new std::vector<std::string>();
    if (text.ok()) *list = nlohmann::json::parse(*text).get<std::vector<std::string>>();
    return list;
  }();
  return *strings;
}

const std::filesystem::path& ProcessTempDir() {
  static const std::filesystem::path* const dir = [] {
    std::string pattern = (std::filesystem::temp_directory_path() / "warp_text_XXXXXX").string();
    auto* path = new std::filesystem::path(mkdtemp(pattern.data()));
    atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(ProcessTempDir(), ignored);
    });
    return path;
  }();
  return *dir;
}

std::filesystem::path WriteTempJson(const nlohmann::json& json, std::string_view name) {
  const std::filesystem::path path = ProcessTempDir() / std::string(name);
  std::ofstream(path) << json.dump();
  return path;
}

absl::StatusOr<nlohmann::json> RunReference(const std::vector<std::string>& args) {
  absl::StatusOr<std::filesystem::path> node_modules = NodeModulesDir();
  if (!node_modules.ok()) return node_modules.status();
  const auto script = warp::testing::SourceDir() / "tests" / "text" / "reference_tokenize.mjs";
  std::vector<std::string> script_args = {node_modules->string()};
  script_args.insert(script_args.end(), args.begin(), args.end());
  absl::StatusOr<std::string> output = warp::testing::RunNode(script, script_args);
  if (!output.ok()) return output.status();
  nlohmann::json result = nlohmann::json::parse(*output, nullptr, /*allow_exceptions=*/false);
  if (result.is_discarded()) {
    return absl::InternalError(absl::StrCat("unparsable output of: ", script.string()));
  }
  return result;
}

absl::StatusOr<std::string> CompactRanksToTiktoken(std::string_view compact) {
  std::string out;
  std::istringstream lines{std::string(compact)};
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string marker, token;
    int64_t rank = 0;
    if (!(fields >> marker >> rank) || marker != "!") {
      return absl::InvalidArgumentError("expected \"! START token...\" groups");
    }
    while (fields >> token) absl::StrAppend(&out, token, " ", rank++, "\n");
  }
  return out;
}

absl::StatusOr<TiktokenFixture> WriteTiktokenFixture(const std::string& encoding,
                                                     const std::filesystem::path& dir) {
  absl::StatusOr<std::filesystem::path> node_modules = NodeModulesDir();
  if (!node_modules.ok()) return node_modules.status();
  absl::StatusOr<std::string> text =
      ReadFileToString(*node_modules / "tiktoken" / "encoders" / (encoding + ".json"));
  if (!text.ok()) return text.status();
  const nlohmann::json json = nlohmann::json::parse(*text);
  absl::StatusOr<std::string> ranks = CompactRanksToTiktoken(json["bpe_ranks"].get<std::string>());
  if (!ranks.ok()) return ranks.status();
  TiktokenFixture fixture;
  std::filesystem::create_directories(dir);
  fixture.ranks_file = dir / (encoding + ".tiktoken");
  std::ofstream(fixture.ranks_file) << *ranks;
  fixture.specials = json["special_tokens"].get<std::map<std::string, int32_t>>();
  fixture.pattern = json["pat_str"].get<std::string>();
  return fixture;
}

absl::StatusOr<const Tokenizer*> CachedTokenizer(const std::filesystem::path& path,
                                                 const LoadOptions& options) {
  static std::mutex mu;
  static auto* cache = new std::map<std::string, std::unique_ptr<Tokenizer>>();
  const std::string key = absl::StrCat(path.string(), "|", options.tiktoken_pattern);
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = cache->find(key); it != cache->end()) return it->second.get();
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::Load(path, options);
  if (!tokenizer.ok()) return tokenizer.status();
  std::unique_ptr<Tokenizer>& slot = (*cache)[key];
  slot = *std::move(tokenizer);
  return slot.get();
}

bool HasBrokenUtf8(std::string_view text) { return !CheckUtf8(text, "").ok(); }

}  // namespace warp::text::testing
