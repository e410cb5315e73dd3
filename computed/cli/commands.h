#pragma once

// The subcommands of `computed`. Each Add*Command registers its options on
// `app` and returns a runner to call once the command line has been parsed;
// the runner returns the process exit code.

#include <functional>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"

namespace warp::computed {

// Returns the exit code, or -1 if its subcommand was not the one given.
using CommandRunner = std::function<int()>;

// A runner for `cmd` that calls `run` and turns its status into the exit code,
// printing "computed NAME: message" on failure.
CommandRunner MakeRunner(CLI::App* cmd, std::function<absl::Status()> run);

CommandRunner AddConvertCommand(CLI::App& app);
CommandRunner AddLogitsCommand(CLI::App& app);
CommandRunner AddRunCommand(CLI::App& app);
CommandRunner AddSynthCommand(CLI::App& app);
CommandRunner AddPlanCommand(CLI::App& app);
CommandRunner AddTokenizeCommand(CLI::App& app);
CommandRunner AddTemplateCommand(CLI::App& app);
CommandRunner AddChatCommand(CLI::App& app);
CommandRunner AddServeCommand(CLI::App& app);

}  // namespace warp::computed
