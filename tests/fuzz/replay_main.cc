// Runs a fuzz harness's LLVMFuzzerTestOneInput over files and directories of
// inputs (the committed corpus), without libFuzzer or sanitizers: the main
// build's ctest replays every corpus this way, so a finding that was fixed
// stays fixed. A crash fails the test; so does an input slower than
// --timeout-ms (default 10000), which the libFuzzer runs count as a hang.
//
//   NAME_replay [--timeout-ms=N] PATH...

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> Inputs(const std::vector<std::string>& args) {
  std::vector<fs::path> inputs;
  for (const std::string& arg : args) {
    if (fs::is_directory(arg)) {
      for (const auto& entry : fs::directory_iterator(arg)) {
        if (entry.is_regular_file()) inputs.push_back(entry.path());
      }
    } else {
      inputs.push_back(arg);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  long timeout_ms = 10'000;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--timeout-ms=")) {
      timeout_ms = std::stol(std::string(arg.substr(13)));
    } else {
      args.emplace_back(arg);
    }
  }
  const std::vector<fs::path> inputs = Inputs(args);
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s [--timeout-ms=N] CORPUS_DIR_OR_FILE...: no inputs\n", argv[0]);
    return 2;
  }
  int slow = 0;
  for (const fs::path& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: cannot read\n", path.c_str());
      return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    if (ms > timeout_ms) {
      std::fprintf(stderr, "%s: took %lld ms (limit %ld)\n", path.c_str(),
                   static_cast<long long>(ms), timeout_ms);
      ++slow;
    }
  }
  std::printf("%zu inputs replayed, %d over %ld ms\n", inputs.size(), slow, timeout_ms);
  return slow == 0 ? 0 : 1;
}
