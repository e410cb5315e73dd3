#include "computed/cli/commands.h"

#include <cstdio>
#include <string>

namespace warp::computed {

CommandRunner MakeRunner(CLI::App* cmd, std::function<absl::Status()> run) {
  return [cmd, run = std::move(run)]() {
    if (!cmd->parsed()) return -1;
    const absl::Status status = run();
    if (status.ok()) return 0;
    std::fprintf(stderr, "computed %s: %s\n", cmd->get_name().c_str(),
                 std::string(status.message()).c_str());
    return 1;
  };
}

}  // namespace warp::computed
