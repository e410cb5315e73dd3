// computed run MODEL.warp "PROMPT" [-n N] [sampling] [engine options]
// Generates a continuation and ends with one stats line. Until the tokenizer
// lands, PROMPT is token ids ("1,2,3") and the output is token ids.

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "computed/cli/commands.h"
#include "computed/cli/session_flags.h"
#include "computed/engine/sampler.h"

namespace warp::computed {

absl::StatusOr<std::vector<int32_t>> ParseTokenIds(const std::string& text);

namespace {

struct RunFlags {
  SessionFlags session;
  std::string prompt;
  uint32_t max_tokens = 32;
  SamplerOptions sampling;
  bool stages = false;
};

absl::Status Run(const RunFlags& flags) {
  auto tokens = ParseTokenIds(flags.prompt);
  if (!tokens.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the prompt must be token ids (\"1,2,3\") until the tokenizer lands: ",
                     tokens.status().message()));
  }
  auto options =
      ToSessionOptions(flags.session, static_cast<uint32_t>(tokens->size()) + flags.max_tokens + 1);
  if (!options.ok()) return options.status();
  auto session = Session::Open(*options);
  if (!session.ok()) return session.status();
  const uint32_t vocab = (*session)->vocab_size();
  auto logits = (*session)->Prefill(*tokens);
  if (!logits.ok()) return logits.status();
  Sampler sampler(flags.sampling);
  int32_t next = sampler.Sample({logits->data() + logits->size() - vocab, vocab});
  for (uint32_t i = 0; i < flags.max_tokens; ++i) {
    std::printf("%s%d", i ? "," : "", next);
    std::fflush(stdout);  // stream as it is generated
    if (i + 1 == flags.max_tokens) break;
    auto step = (*session)->Step(next);
    if (!step.ok()) {
      std::printf("\n");
      return step.status();
    }
    next = sampler.Sample(*step);
  }
  std::printf("\n");
  std::fflush(stdout);
  absl::Status finished = (*session)->Finish();
  std::fprintf(stderr, "%s\n", (*session)->StatsLine().c_str());
  if (flags.stages) std::fprintf(stderr, "%s", (*session)->StageReport().c_str());
  return finished;
}

}  // namespace

CommandRunner AddRunCommand(CLI::App& app) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "Generate a continuation of a prompt");
  AddSessionFlags(cmd, flags->session);
  cmd->add_option("prompt", flags->prompt, "The prompt (token ids until the tokenizer lands)")
      ->required();
  cmd->add_option("-n,--max-tokens", flags->max_tokens, "Tokens to generate")
      ->capture_default_str();
  cmd->add_option("--temperature", flags->sampling.temperature, "Sampling temperature (0: greedy)");
  cmd->add_option("--top-k", flags->sampling.top_k, "Sample among the k best tokens (0: all)");
  cmd->add_option("--top-p", flags->sampling.top_p, "Nucleus sampling mass (1: off)");
  cmd->add_option("--seed", flags->sampling.seed, "Sampling seed");
  cmd->add_flag("--stages", flags->stages, "Also print the time per pipeline stage");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
