#include "tests/fuzz/fuzz_support.h"

#include <stdlib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <system_error>

#include "common/logging.h"
#include "spdlog/spdlog.h"
#include "tests/testing/tiny_container.h"

namespace warp::fuzz {
namespace {

namespace fs = std::filesystem;

fs::path* scratch_dir = nullptr;

void RemoveScratchDir() {
  std::error_code ignored;
  if (scratch_dir != nullptr) fs::remove_all(*scratch_dir, ignored);
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "fuzz harness: %s\n", what.c_str());
  std::abort();
}

}  // namespace

void Init() {
  if (scratch_dir != nullptr) return;
  InitLogging("off");
  spdlog::set_level(spdlog::level::off);
  // tmpfs keeps the per-input file writes of the file-based parsers cheap.
  std::string base = fs::is_directory("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
  std::string pattern = base + "/warp-fuzz-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) Die("mkdtemp " + pattern + " failed");
  scratch_dir = new fs::path(pattern);
  // WARP_FUZZ_KEEP_SCRATCH=1 keeps it, to look at the files of the last input.
  if (std::getenv("WARP_FUZZ_KEEP_SCRATCH") == nullptr) std::atexit(RemoveScratchDir);
}

const fs::path& ScratchDir() {
  if (scratch_dir == nullptr) Die("Init() was not called");
  return *scratch_dir;
}

void WriteFileOrDie(const fs::path& path, std::string_view bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) Die("cannot write " + path.string());
}

const fs::path& TinyContainer(const std::string& name) {
  static auto* containers = new std::map<std::string, fs::path>();
  auto it = containers->find(name);
  if (it != containers->end()) return it->second;
  const fs::path dir = ScratchDir() / name;
  auto manifest = warp::testing::WriteTinyContainer(dir, {.num_layers = 2, .num_experts = 4});
  if (!manifest.ok()) Die(manifest.status().ToString());
  return containers->emplace(name, dir).first->second;
}

}  // namespace warp::fuzz
