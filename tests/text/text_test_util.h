#pragma once

// Shared fixtures of the tokenizer tests: the shared test strings, the real
// tokenizer files of tests/npm, tiktoken files written from tiktoken's
// encoders, and the node script that runs the reference implementations.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace warp::text::testing {

// tests/npm/node_modules, or FailedPrecondition telling to run tests/npm/install.sh.
absl::StatusOr<std::filesystem::path> NodeModulesDir();

// tests/text/test_strings.json.
const std::vector<std::string>& TestStrings();

// A directory that lives as long as the test process.
const std::filesystem::path& ProcessTempDir();

// Runs `node tests/text/reference_tokenize.mjs NODE_MODULES args...` and
// parses what it prints.
absl::StatusOr<nlohmann::json> RunReference(const std::vector<std::string>& args);

// Writes `json` (an array of strings, or anything) to a fresh file in ProcessTempDir().
std::filesystem::path WriteTempJson(const nlohmann::json& json, std::string_view name);

// A tiktoken file written from tiktoken's encoders/ENCODING.json.
struct TiktokenFixture {
  std::filesystem::path ranks_file;  // `base64 rank` lines
  std::map<std::string, int32_t> specials;
  std::string pattern;  // the encoding's pat_str
};
absl::StatusOr<TiktokenFixture> WriteTiktokenFixture(const std::string& encoding,
                                                     const std::filesystem::path& dir);

// Converts tiktoken's compact bpe_ranks ("! START tok tok ...", one group per
// line, ranks consecutive) to `base64 rank` lines.
absl::StatusOr<std::string> CompactRanksToTiktoken(std::string_view compact);

// Loads `path` once per process (the real files take a while to parse).
absl::StatusOr<const Tokenizer*> CachedTokenizer(const std::filesystem::path& path,
                                                 const LoadOptions& options = {});

// True if `text` ends inside a UTF-8 sequence or holds an invalid one.
bool HasBrokenUtf8(std::string_view text);

}  // namespace warp::text::testing
