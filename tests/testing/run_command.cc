#include "tests/testing/run_command.h"

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>

namespace warp::testing {

std::string BinaryPath(const std::string& binary) {
  const char* bin_dir = std::getenv("WARP_BIN_DIR");
  return std::string(bin_dir ? bin_dir : WARP_TEST_BIN_DIR) + "/" + binary;
}

CommandResult RunBinary(const std::string& binary, const std::string& args,
                        int kill_after_seconds) {
  const std::string timeout =
      kill_after_seconds > 0 ? "timeout -s KILL " + std::to_string(kill_after_seconds) + " " : "";
  const std::string command = timeout + BinaryPath(binary) + " " + args + " 2>&1 </dev/null";
  CommandResult result;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

}  // namespace warp::testing
