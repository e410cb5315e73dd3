// expertd: the expert-storage daemon of one disk, and its offline tools.
// Subcommands: verify.

#include <cstdio>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/byte_size.h"
#include "common/logging.h"
#include "expertd/verify.h"

namespace {

int RunVerify(const std::vector<std::string>& dirs, bool quiet) {
  int exit_code = 0;
  for (const std::string& dir : dirs) {
    auto report = warp::expertd::VerifyContainer(dir, {.show_progress = !quiet});
    if (!report.ok()) {
      std::fprintf(stderr, "expertd verify: %s\n", std::string(report.status().message()).c_str());
      exit_code = 1;
      continue;
    }
    for (const std::string& problem : report->problems) {
      std::fprintf(stderr, "%s\n", problem.c_str());
    }
    std::printf(
        "%s: %llu records, %llu trunk tensors, %s in %.2f s (%s/s): %s\n", dir.c_str(),
        static_cast<unsigned long long>(report->records_checked),
        static_cast<unsigned long long>(report->trunk_tensors_checked),
        warp::FormatBytes(report->bytes_read).c_str(), report->seconds,
        warp::FormatBytes(report->seconds > 0 ? report->bytes_read / report->seconds : 0).c_str(),
        report->problems.empty() ? "OK"
        : report->problems.size() == 1
            ? "1 problem"
            : (std::to_string(report->problems.size()) + " problems").c_str());
    if (!report->problems.empty()) exit_code = 1;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"expertd: WARP expert-storage daemon and tools"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error");

  std::vector<std::string> verify_dirs;
  bool quiet = false;
  CLI::App* verify = app.add_subcommand(
      "verify", "Check every record footer and CRC32C of a container and its shard directories");
  verify->add_option("model", verify_dirs, "MODEL.warp [SHARD_DIR ...]")->required();
  verify->add_flag("--quiet", quiet, "No progress bar");

  CLI11_PARSE(app, argc, argv);
  warp::InitLogging(log_level);
  if (verify->parsed()) return RunVerify(verify_dirs, quiet);
  return 2;
}
