#pragma once

// Runs a built binary (from $WARP_BIN_DIR, else the build's bin/) for CLI
// tests, capturing its exit code and combined stdout + stderr.

#include <string>

namespace warp::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};

// `binary` is a file name in $WARP_BIN_DIR ("computed", "expertd"); `args`
// is appended to the shell command line as is.
CommandResult RunBinary(const std::string& binary, const std::string& args);

}  // namespace warp::testing
