#pragma once

// Where tests find the source tree's files: the reference fixtures
// (tests/fixtures/NAME) and docs. $WARP_SOURCE_DIR overrides the build's.

#include <cstdlib>
#include <filesystem>
#include <string>

namespace warp::testing {

inline std::filesystem::path SourceDir() {
  const char* dir = std::getenv("WARP_SOURCE_DIR");
  return dir ? dir : WARP_TEST_SOURCE_DIR;
}

// tests/fixtures/NAME: a Hugging Face checkpoint and its reference outputs.
inline std::filesystem::path FixtureDir(const std::string& name) {
  return SourceDir() / "tests" / "fixtures" / name;
}

}  // namespace warp::testing
