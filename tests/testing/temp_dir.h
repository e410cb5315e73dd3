#pragma once

// A fresh directory under the test temp dir, removed with everything in it
// when the object dies. Short paths, so Unix socket paths stay under 108 bytes.
//
// Thread-compatible.

#include <stdlib.h>

#include <filesystem>
#include <string>

#include "gtest/gtest.h"

namespace warp::testing {

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::path(::testing::TempDir()) / "warpXXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace warp::testing
