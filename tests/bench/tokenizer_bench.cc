// Tokenizer throughput: load time and encode MB/s of a tokenizer on a text
// file, the text encoded line by line (as a chat or a prompt arrives) and as
// one string. Compared in tokenizer_bench.sh with the npm reference on the
// same file.
//
//   tokenizer_bench TOKENIZER TEXT_FILE

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "common/io/file.h"
#include "computed/text/tokenizer.h"

namespace {

double Seconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER TEXT_FILE\n");
    return 2;
  }
  absl::StatusOr<std::string> text = warp::ReadFileToString(argv[2]);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", std::string(text.status().message()).c_str());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  auto tokenizer = warp::text::Tokenizer::Load(argv[1]);
  if (!tokenizer.ok()) {
    std::fprintf(stderr, "%s\n", std::string(tokenizer.status().message()).c_str());
    return 1;
  }
  const double load = Seconds(start);
  std::vector<std::string> lines = absl::StrSplit(*text, '\n');
  start = std::chrono::steady_clock::now();
  size_t tokens = 0;
  for (const std::string& line : lines) tokens += (*tokenizer)->Encode(line)->size();
  const double by_line = Seconds(start);
  start = std::chrono::steady_clock::now();
  const size_t whole = (*tokenizer)->Encode(*text)->size();
  const double at_once = Seconds(start);
  const double mb = text->size() / 1e6;
  std::printf("warp    load %.3f s | by line %.1f MB/s (%zu tokens) | whole %.1f MB/s (%zu tokens)\n",
              load, mb / by_line, tokens, mb / at_once, whole);
  return 0;
}
