#pragma once

// The subcommands of `computed`. Each Add*Command registers its options on
// `app` and returns a runner to call once the command line has been parsed;
// the runner returns the process exit code.

#include <functional>

#include "CLI/CLI.hpp"

namespace warp::computed {

using CommandRunner = std::function<int()>;

CommandRunner AddSynthCommand(CLI::App& app);
CommandRunner AddPlanCommand(CLI::App& app);

}  // namespace warp::computed
