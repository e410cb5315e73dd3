// computed: the compute client of WARP. Subcommands: convert, logits, run, chat, tokenize,
// template, synth, plan, serve.

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/logging.h"
#include "common/memory/heap_reuse.h"
#include "computed/cli/commands.h"

int main(int argc, char** argv) {
  warp::KeepFreedHeapMemory();  // before any thread allocates: common/memory/heap_reuse.h
  CLI::App app{"computed: run Mixture-of-Experts models larger than RAM"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
  std::vector<warp::computed::CommandRunner> runners = {
      warp::computed::AddConvertCommand(app),  warp::computed::AddLogitsCommand(app),
      warp::computed::AddRunCommand(app),      warp::computed::AddSynthCommand(app),
      warp::computed::AddPlanCommand(app),     warp::computed::AddChatCommand(app),
      warp::computed::AddTokenizeCommand(app), warp::computed::AddTemplateCommand(app),
      warp::computed::AddServeCommand(app),
  };
  CLI11_PARSE(app, argc, argv);
  warp::InitLogging(log_level);
  for (const auto& run : runners) {
    if (int code = run(); code >= 0) return code;
  }
  return 2;
}
