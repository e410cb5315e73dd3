// computed synth --arch ARCH --preset PRESET [--size SIZE] [--seed N] OUT.warp

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "computed/cli/commands.h"
#include "computed/synth/presets.h"
#include "computed/synth/synth_model.h"

namespace warp::computed {
namespace {

struct SynthFlags {
  std::string out;
  std::string arch = "deepseek_v3";
  std::string preset = "tiny";
  std::string size;
  std::string experts;
  std::string trunk;
  uint64_t seed = 1;
  bool no_direct = false;
  bool quiet = false;
};

std::string PresetList() {
  std::string list = "Presets:";
  for (const Preset& preset : AllPresets()) {
    absl::StrAppend(&list, "\n  ", preset.arch, " / ", preset.name, ": ", preset.about);
  }
  return list;
}

absl::StatusOr<std::optional<TensorFormat>> ParseFormatFlag(const std::string& text,
                                                            std::string_view flag) {
  if (text.empty()) return std::nullopt;
  std::optional<TensorFormat> format = ParseTensorFormat(text);
  if (!format) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(flag), ": unknown format \"", text,
                     "\" (f32, f16, bf16, q8_b32, q4_b32, mxfp4_b32)"));
  }
  return format;
}

absl::Status Run(const SynthFlags& flags) {
  SynthOptions options{.arch = flags.arch,
                       .preset = flags.preset,
                       .seed = flags.seed,
                       .direct_io = !flags.no_direct,
                       .show_progress = !flags.quiet};
  if (!flags.size.empty()) {
    auto size = ParseByteSize(flags.size);
    if (!size.ok()) return size.status();
    options.target_bytes = *size;
  }
  auto experts = ParseFormatFlag(flags.experts, "--experts");
  if (!experts.ok()) return experts.status();
  options.expert_format = *experts;
  if (flags.trunk.starts_with("mixed") || flags.trunk.starts_with("q4:")) {
    options.trunk_choice = flags.trunk;  // by kind, over the preset's trunk format
  } else {
    auto trunk = ParseFormatFlag(flags.trunk, "--trunk");
    if (!trunk.ok()) return trunk.status();
    options.trunk_format = *trunk;
  }
  auto result = SynthesizeModel(flags.out, options);
  if (!result.ok()) return result.status();
  std::printf(
      "wrote %s: %s in %.1f s (%s/s), %zu banks, fingerprint %s\n", flags.out.c_str(),
      FormatBytes(result->bytes_written).c_str(), result->seconds,
      FormatBytes(result->seconds > 0 ? result->bytes_written / result->seconds : 0).c_str(),
      result->manifest.banks.size(), FingerprintHex(result->manifest.fingerprint).c_str());
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddSynthCommand(CLI::App& app) {
  auto flags = std::make_shared<SynthFlags>();
  CLI::App* cmd = app.add_subcommand("synth", "Write a container of seeded random weights");
  cmd->footer(PresetList());
  cmd->add_option("out", flags->out, "Output directory, e.g. model.warp")->required();
  cmd->add_option("--arch", flags->arch, "Architecture (model_type)")->capture_default_str();
  cmd->add_option("--preset", flags->preset, "Shape preset")->capture_default_str();
  cmd->add_option("--size", flags->size, "Scale layers/experts to this total size, e.g. 30G");
  cmd->add_option("--seed", flags->seed, "Random seed")->capture_default_str();
  cmd->add_option("--experts", flags->experts, "Expert format (default: the preset's)");
  cmd->add_option("--trunk", flags->trunk,
                  "Trunk matrix format (default: the preset's), or mixed, as convert --trunk "
                  "mixed stores it by kind over the preset's format");
  cmd->add_flag("--no-direct", flags->no_direct, "Write through the page cache, not O_DIRECT");
  cmd->add_flag("--quiet", flags->quiet, "No progress bar");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
