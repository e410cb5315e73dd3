#pragma once

// Running the npm test peers (tests/npm: reference tokenizers, the reference
// Jinja renderer) through node, for tests that compare against them.

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::testing {

// tests/npm/node_modules if `package` (e.g. "@huggingface/jinja") is installed
// there, else FailedPrecondition telling to run tests/npm/install.sh.
absl::StatusOr<std::filesystem::path> NodeModulesDir(std::string_view package);

// Runs `node SCRIPT ARGS...` and returns its stdout; a non-zero exit is an
// error naming the command.
// Runs `INTERPRETER SCRIPT ARGS...` (each quoted for the shell) and returns
// its stdout; a non-zero exit is an error naming the command.
absl::StatusOr<std::string> RunScript(std::string_view interpreter,
                                      const std::filesystem::path& script,
                                      const std::vector<std::string>& args);

absl::StatusOr<std::string> RunNode(const std::filesystem::path& script,
                                    const std::vector<std::string>& args);

}  // namespace warp::testing
