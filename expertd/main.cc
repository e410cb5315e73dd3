// expertd: the expert-storage daemon of one disk, and its offline tools.
// Subcommands: serve, verify, shard, probe.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/logging.h"
#include "common/memory/heap_reuse.h"
#include "expertd/probe.h"
#include "expertd/serve.h"
#include "expertd/serve_command.h"
#include "expertd/shard.h"
#include "expertd/shard_verify.h"
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

// `expertd verify MODEL SHARD...`: the shards checked against the model as a set.
int RunVerifySet(const std::vector<std::string>& dirs, bool quiet) {
  const std::vector<std::filesystem::path> shards(dirs.begin() + 1, dirs.end());
  auto report = warp::expertd::VerifyShardSet(dirs[0], shards, {.show_progress = !quiet});
  if (!report.ok()) {
    std::fprintf(stderr, "expertd verify: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  for (const std::string& problem : report->problems) std::fprintf(stderr, "%s\n", problem.c_str());
  const size_t problems = report->problems.size();
  std::printf(
      "%s + %zu shards: %llu records, %llu trunk tensors, %s in %.2f s (%s/s): %s\n",
      dirs[0].c_str(), shards.size(), static_cast<unsigned long long>(report->records_checked),
      static_cast<unsigned long long>(report->trunk_tensors_checked),
      warp::FormatBytes(report->bytes_read).c_str(), report->seconds,
      warp::FormatBytes(report->seconds > 0 ? report->bytes_read / report->seconds : 0).c_str(),
      problems == 0   ? "OK"
      : problems == 1 ? "1 problem"
                      : (std::to_string(problems) + " problems").c_str());
  return problems == 0 ? 0 : 1;
}

int RunShard(const std::string& model, const std::vector<std::string>& dirs,
             const warp::expertd::ShardOptions& options) {
  const std::vector<std::filesystem::path> paths(dirs.begin(), dirs.end());
  auto report = warp::expertd::ShardContainer(model, paths, options);
  if (!report.ok()) {
    std::fprintf(stderr, "expertd shard: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  for (size_t s = 0; s < report->probed.size(); ++s) {
    std::printf("%s: disk %s/s, its weight\n", dirs[s].c_str(),
                warp::FormatBytes(static_cast<uint64_t>(report->probed[s])).c_str());
  }
  for (size_t s = 0; s < dirs.size(); ++s) {
    std::printf("%s: shard %zu of %zu, %llu records (%llu replicated on another shard)\n",
                dirs[s].c_str(), s, dirs.size(), static_cast<unsigned long long>(report->records[s]),
                static_cast<unsigned long long>(report->replicated[s]));
  }
  std::printf(
      "%s: sharded into %zu directories, %s in %.2f s (%s/s)\n", model.c_str(), dirs.size(),
      warp::FormatBytes(report->bytes_copied).c_str(), report->seconds,
      warp::FormatBytes(report->seconds > 0 ? report->bytes_copied / report->seconds : 0).c_str());
  return 0;
}

// `expertd probe DIR...`: each directory's disk, and the --weights they give.
int RunProbe(const std::vector<std::string>& dirs) {
  std::vector<std::string> weights;
  for (const std::string& dir : dirs) {
    auto probe = warp::expertd::ProbeDirectory(dir);
    if (!probe.ok()) {
      std::fprintf(stderr, "expertd probe: %s\n", std::string(probe.status().message()).c_str());
      return 1;
    }
    const double rate = probe->bytes_per_second();
    std::printf("%s: %s/s (%s read in %.3f s%s)\n", dir.c_str(),
                warp::FormatBytes(static_cast<uint64_t>(rate)).c_str(),
                warp::FormatBytes(probe->bytes).c_str(), probe->seconds,
                probe->direct ? " with O_DIRECT" : ", not O_DIRECT: the page cache, not the disk");
    weights.push_back(absl::StrFormat("%.2f", rate / 1e9));
  }
  if (dirs.size() > 1) {
    std::printf("expertd shard ... --dirs %s --weights %s\n", absl::StrJoin(dirs, ",").c_str(),
                absl::StrJoin(weights, ",").c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  warp::KeepFreedHeapMemory();  // before any thread allocates: common/memory/heap_reuse.h
  CLI::App app{"expertd: WARP expert-storage daemon and tools"};
  app.require_subcommand(1);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));

  std::vector<std::string> verify_dirs;
  bool quiet = false;
  CLI::App* verify = app.add_subcommand(
      "verify", "Check every record footer and CRC32C of a container and its shard directories");
  verify->add_option("model", verify_dirs, "MODEL.warp [SHARD_DIR ...]")->required();
  verify->add_flag("--quiet", quiet, "No progress bar");

  std::string shard_model;
  std::vector<std::string> shard_dirs;
  warp::expertd::ShardOptions shard_options;
  uint64_t replicate_mib = 0;
  CLI::App* shard = app.add_subcommand(
      "shard", "Split the expert banks of a container across directories (one per disk)");
  shard->add_option("model", shard_model, "MODEL.warp")->required();
  shard->add_option("--dirs", shard_dirs, "Shard directories A,B[,C...]; none may hold a container")
      ->delimiter(',')
      ->allow_extra_args(false)  // one A,B list: a positional after it stays the model
      ->required();
  shard
      ->add_option("--weights", shard_options.weights,
                   "W1,W2,...: one positive weight per directory; experts in proportion "
                   "(default: expert e to shard e % N)")
      ->delimiter(',')
      ->allow_extra_args(false);
  shard->add_flag("--probe-weights", shard_options.probe_weights,
                  "Weights from each directory's disk, measured first (expertd probe): for "
                  "shards on this machine's disks");
  shard->add_option("--usage", shard_options.usage_file,
                    "usage.warp of this model (computed --learn): hot experts spread evenly "
                    "over the shards, each layer's heat in proportion to the weights");
  shard->add_option("--replicate-mib", replicate_mib,
                    "MiB per shard for replicas of the hottest experts (needs --usage); a "
                    "client reads a replicated expert from the holder with the shortest queue "
                    "and from another while one is down");
  shard->add_flag("--quiet", quiet, "No progress bar");

  std::vector<std::string> probe_dirs;
  CLI::App* probe = app.add_subcommand(
      "probe", "Measure the disk under each directory (large O_DIRECT reads), for shard --weights");
  probe->add_option("dirs", probe_dirs,
                    "DIR ...: a 256 MiB scratch file is written in each, read back, removed")
      ->required();

  auto serve = warp::expertd::AddServeCommand(app);

  CLI11_PARSE(app, argc, argv);
  warp::InitLogging(log_level);
  if (verify->parsed()) {
    return verify_dirs.size() > 1 ? RunVerifySet(verify_dirs, quiet)
                                  : RunVerify(verify_dirs, quiet);
  }
  if (probe->parsed()) return RunProbe(probe_dirs);
  if (shard->parsed()) {
    shard_options.replica_bytes = replicate_mib << 20;
    shard_options.show_progress = !quiet;
    return RunShard(shard_model, shard_dirs, shard_options);
  }
  // Before any thread starts, so every thread inherits the mask and sigwait sees the signal.
  warp::expertd::BlockTerminationSignals();
  if (int code = serve(); code >= 0) return code;
  return 2;
}
