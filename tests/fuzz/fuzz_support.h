#pragma once
// What the fuzz harnesses share: logging silenced, a scratch directory per
// process (tmpfs when there is one; WARP_FUZZ_KEEP_SCRATCH=1 keeps it at
// exit), files written into it, tiny containers.
// The harnesses themselves are one .cc per parser; docs/RELIABILITY.md lists them.
//
// Thread-compatible: libFuzzer calls a harness from one thread.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace warp::fuzz {

// Once per process: spdlog off (a warning per input would dominate the run
// time) and the scratch directory made; it is removed at exit.
void Init();

// The scratch directory. REQUIRES: Init().
const std::filesystem::path& ScratchDir();

// The input as text, without a copy.
inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Replaces `path` with `bytes`. Aborts on failure: the harness's environment is broken.
void WriteFileOrDie(const std::filesystem::path& path, std::string_view bytes);

// ScratchDir()/name as a tiny container (2 MoE layers x 4 experts, 4 KiB records),
// written on the first call for that name.
const std::filesystem::path& TinyContainer(const std::string& name);

}  // namespace warp::fuzz
