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
// is appended to the shell command line as is; stdin is /dev/null. With
// `kill_after_seconds`, a run that has not ended by then is killed (exit code
// 137), so a regression that leaves a daemon serving fails instead of hanging.
CommandResult RunBinary(const std::string& binary, const std::string& args,
                        int kill_after_seconds = 0);

// The path RunBinary runs `binary` from.
std::string BinaryPath(const std::string& binary);

}  // namespace warp::testing
