// computed convert HF_DIR OUT.warp [--experts native|q8|q4|vq3r] [--trunk native|bf16|q8|q4|mixed]
//   [--no-early-route-folds]

#include <cstdio>
#include <memory>
#include <string>

#include "common/byte_size.h"
#include "computed/cli/commands.h"
#include "computed/convert/converter.h"

namespace warp::computed {
namespace {

struct ConvertFlags {
  std::string hf_dir;
  std::string out;
  ConvertOptions options;
  bool no_direct = false;
  bool no_early_route_folds = false;
  bool quiet = false;
};

absl::Status Run(ConvertFlags& flags) {
  flags.options.direct_io = !flags.no_direct;
  flags.options.early_route_folds = !flags.no_early_route_folds;
  flags.options.show_progress = !flags.quiet;
  auto result = ConvertCheckpoint(flags.hf_dir, flags.out, flags.options);
  if (!result.ok()) return result.status();
  std::printf("wrote %s: %zu banks, read %s in %.1f s, fingerprint %s\n", flags.out.c_str(),
              result->manifest.banks.size(), FormatBytes(result->bytes_read).c_str(),
              result->seconds, FingerprintHex(result->manifest.fingerprint).c_str());
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddConvertCommand(CLI::App& app) {
  auto flags = std::make_shared<ConvertFlags>();
  CLI::App* cmd =
      app.add_subcommand("convert", "Convert a Hugging Face checkpoint to a .warp container");
  cmd->add_option("hf_dir", flags->hf_dir, "Directory with config.json and *.safetensors")
      ->required();
  cmd->add_option("out", flags->out, "Output directory, e.g. model.warp")->required();
  cmd->add_option(
      "--experts", flags->options.experts,
      "native (default), q8, q4 or vq3r (3-bit residual VQ, codebooks trained per layer)");
  cmd->add_option("--trunk", flags->options.trunk,
                  "native (default), bf16, q8, q4, or mixed (the sensitive kinds 8-bit, the rest "
                  "q4: docs/ENGINE.md)");
  cmd->add_flag("--no-direct", flags->no_direct, "Write through the page cache, not O_DIRECT");
  cmd->add_flag("--no-early-route-folds", flags->no_early_route_folds,
                "Do not fold each router through its attention's output projection into the "
                "trunk (f32 [experts][heads x head_dim] a layer; without it, layers route after "
                "their attention unless `computed run --early-route` folds at load)");
  cmd->add_flag("--quiet", flags->quiet, "No progress bar");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
