#pragma once

// The `expertd serve` subcommand: flags over an optional textproto config.

#include <functional>

#include "CLI/CLI.hpp"

namespace warp::expertd {

// Registers `serve` on `app`; the returned runner gives the exit code, or -1
// when another subcommand was chosen.
std::function<int()> AddServeCommand(CLI::App& app);

}  // namespace warp::expertd
