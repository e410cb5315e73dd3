#include "tests/testing/node_peers.h"

#include <stdio.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "tests/testing/fixtures.h"

namespace warp::testing {
namespace {

std::string ShellQuote(std::string_view arg) {
  std::string quoted = "'";
  for (const char c : arg) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted.push_back(c);
    }
  }
  return quoted + "'";
}

std::string NodeBinary() { return access("/usr/bin/node", X_OK) == 0 ? "/usr/bin/node" : "node"; }

}  // namespace

absl::StatusOr<std::filesystem::path> NodeModulesDir(std::string_view package) {
  const std::filesystem::path dir = SourceDir() / "tests" / "npm" / "node_modules";
  if (!std::filesystem::exists(dir / package)) {
    return absl::FailedPreconditionError(
        absl::StrCat((dir / package).string(), " is missing: run tests/npm/install.sh"));
  }
  return dir;
}

absl::StatusOr<std::string> RunScript(std::string_view interpreter,
                                      const std::filesystem::path& script,
                                      const std::vector<std::string>& args) {
  std::string command = absl::StrCat(std::string(interpreter), " ", ShellQuote(script.string()));
  for (const std::string& arg : args) absl::StrAppend(&command, " ", ShellQuote(arg));
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("popen failed: ", command));
  std::string output;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    return absl::InternalError(absl::StrCat("exit status ", status, " from: ", command));
  }
  return output;
}

absl::StatusOr<std::string> RunNode(const std::filesystem::path& script,
                                    const std::vector<std::string>& args) {
  return RunScript(NodeBinary(), script, args);
}

}  // namespace warp::testing
