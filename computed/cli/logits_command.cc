// computed logits MODEL.warp --tokens 1,2,3 [--out FILE] [--greedy N [--decode-out FILE]]
//                [engine options]
// The diagnostic forward pass: logits of every prompt position as float32
// little-endian [positions][vocab], and optionally a continuation (with the
// logits of each of its decode steps, [steps][vocab]).

#include <cstdio>
#include <fstream>
#include <memory>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "computed/cli/commands.h"
#include "computed/cli/session_flags.h"
#include "computed/cli/token_ids.h"
#include "computed/engine/sampler.h"

namespace warp::computed {

namespace {

struct LogitsFlags {
  SessionFlags session;
  std::string tokens;
  std::string out;
  std::string decode_out;
  uint32_t greedy = 0;
  SamplerOptions sampling;  // temperature 0: greedy
};

absl::Status WriteFloats(const std::string& path, std::span<const float> values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
  if (!out) return absl::InternalError(absl::StrCat(path, ": write failed"));
  return absl::OkStatus();
}

absl::Status Run(const LogitsFlags& flags) {
  auto tokens = ParseTokenIds(flags.tokens, "--tokens");
  if (!tokens.ok()) return tokens.status();
  auto options = ResolveSessionOptions(flags.session, uint64_t{tokens->size()} + flags.greedy + 1);
  if (!options.ok()) return options.status();
  auto session = Session::Open(*options);
  if (!session.ok()) return session.status();
  const uint32_t vocab = (*session)->vocab_size();
  auto logits = (*session)->Prefill(*tokens);
  if (!logits.ok()) return logits.status();
  if (!flags.out.empty()) {
    if (absl::Status written = WriteFloats(flags.out, *logits); !written.ok()) return written;
  }
  if (flags.greedy > 0) {
    std::vector<int32_t> generated;
    std::vector<float> steps;  // [greedy - 1][vocab]
    Sampler sampler(flags.sampling);
    int32_t next = sampler.Sample({logits->data() + logits->size() - vocab, vocab});
    for (uint32_t i = 0; i < flags.greedy; ++i) {
      generated.push_back(next);
      if (i + 1 == flags.greedy) break;
      auto step = (*session)->Step(next);
      if (!step.ok()) return step.status();
      next = sampler.Sample(*step);
      if (!flags.decode_out.empty()) steps.insert(steps.end(), step->begin(), step->end());
    }
    std::printf("%s\n", absl::StrJoin(generated, ",").c_str());
    if (!flags.decode_out.empty()) {
      if (absl::Status written = WriteFloats(flags.decode_out, steps); !written.ok()) {
        return written;
      }
    }
  }
  return (*session)->Finish();
}

}  // namespace

CommandRunner AddLogitsCommand(CLI::App& app) {
  auto flags = std::make_shared<LogitsFlags>();
  CLI::App* cmd = app.add_subcommand("logits", "Run a prompt and write its logits");
  AddSessionFlags(cmd, flags->session);
  cmd->add_option("--tokens", flags->tokens, "Prompt token ids, comma-separated")->required();
  cmd->add_option("--out", flags->out, "Write float32 [positions][vocab] here");
  cmd->add_option("--greedy", flags->greedy,
                  "Then decode N tokens (greedily unless --temperature) and print them");
  cmd->add_option("--decode-out", flags->decode_out,
                  "Write float32 [steps][vocab] of the --greedy continuation's decode steps here");
  AddSamplingFlags(cmd, flags->sampling);
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
