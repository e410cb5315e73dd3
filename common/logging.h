#pragma once

// The named spdlog loggers of WARP, created once at startup. Hot paths hold
// the returned reference; nobody calls spdlog::get per record.
//
// Thread-safe: loggers are created under a once-flag and spdlog's sinks lock.

#include <memory>
#include <string_view>

#include "spdlog/spdlog.h"

namespace warp {

// Creates every named logger, writing to stderr with the `[name] level: msg`
// pattern. `level` is an spdlog level name ("info", "debug", ...); an unknown
// name keeps "info". Idempotent; loggers are also created lazily on first use.
void InitLogging(std::string_view level = "info");

// Returns the logger called `name` (e.g. "expertd.store"), creating it if needed.
spdlog::logger& Logger(std::string_view name);

}  // namespace warp
