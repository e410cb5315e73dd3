// computed run MODEL.warp "PROMPT" [-n N] [--raw] [--system TEXT] [template options]
//              [sampling] [engine options]
// Generates a continuation, streams it as text, and ends with one stats line.
// The prompt goes through the model's chat template unless --raw; a model
// without a tokenizer (or --ids) takes and prints token ids ("1,2,3").

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/format/container.h"
#include "computed/cli/commands.h"
#include "computed/cli/session_flags.h"
#include "computed/cli/template_flags.h"
#include "computed/cli/token_ids.h"
#include "computed/run/generation.h"
#include "computed/run/model_text.h"

namespace warp::computed {
namespace {

struct RunFlags {
  SessionFlags session;
  std::string prompt;
  uint32_t max_tokens = 32;
  SamplerOptions sampling;
  bool stages = false;
  bool raw = false;
  bool ids = false;
  bool ignore_eos = false;
  std::string system;
  TemplateFlags template_flags;
};

// The prompt as token ids: through the chat template unless --raw, else
// encoded as the tokenizer's post-processor says (e.g. with BOS).
absl::StatusOr<std::vector<int32_t>> EncodePrompt(const RunFlags& flags, const ModelText& text,
                                                  const nlohmann::ordered_json& template_context) {
  if (flags.raw || !text.chat_template) {
    return text.tokenizer->Encode(flags.prompt, /*add_special_tokens=*/true);
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!flags.system.empty()) messages.push_back({{"role", "system"}, {"content", flags.system}});
  messages.push_back({{"role", "user"}, {"content", flags.prompt}});
  auto rendered =
      text.chat_template->RenderOrdered(messages, /*add_generation_prompt=*/true, template_context);
  if (!rendered.ok()) return rendered.status();
  return text.tokenizer->Encode(*rendered);
}

// Ids mode when asked for, or when the model has no tokenizer to speak with.
absl::StatusOr<std::optional<ModelText>> TextLayer(const RunFlags& flags) {
  if (flags.ids) {
    if (flags.template_flags.given()) {
      return absl::InvalidArgumentError(
          "--ids skips the chat template: drop --chat-template, --tools and --template-kwargs");
    }
    return std::nullopt;
  }
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(flags.session.options.model);
  if (!container.ok()) return container.status();
  if (!(*container)->manifest().tokenizer) {
    if (flags.template_flags.given()) {
      return absl::FailedPreconditionError(
          absl::StrCat(flags.session.options.model,
                       ": the model has no tokenizer, so it takes token ids "
                       "and no chat template (--chat-template, --tools, --template-kwargs)"));
    }
    return std::nullopt;
  }
  absl::StatusOr<ModelText> text = LoadModelText(**container);
  if (!text.ok()) return text.status();
  return std::optional<ModelText>(*std::move(text));
}

absl::Status Run(const RunFlags& flags) {
  if (flags.raw && flags.template_flags.given()) {
    return absl::InvalidArgumentError(
        "--raw skips the chat template: drop --chat-template, --tools and --template-kwargs");
  }
  auto text = TextLayer(flags);
  if (!text.ok()) return text.status();
  const bool speaks = text->has_value();
  nlohmann::ordered_json template_context = nlohmann::ordered_json::object();
  if (speaks) {
    auto context = ApplyTemplateFlags(flags.template_flags, **text);
    if (!context.ok()) return context.status();
    template_context = *std::move(context);
  }
  auto tokens = speaks ? EncodePrompt(flags, **text, template_context)
                       : ParseTokenIds(flags.prompt, "prompt");
  if (!tokens.ok()) {
    if (speaks) return tokens.status();
    return absl::InvalidArgumentError(
        absl::StrCat("the model has no tokenizer, so the prompt must be token ids (\"1,2,3\"): ",
                     tokens.status().message()));
  }
  auto options = ResolveSessionOptions(flags.session, uint64_t{tokens->size()} + flags.max_tokens + 1);
  if (!options.ok()) return options.status();
  auto session = Session::Open(*options);
  if (!session.ok()) return session.status();
  auto logits = (*session)->PrefillLast(*tokens);
  if (!logits.ok()) return logits.status();

  GenerationLimits limits{.max_tokens = flags.max_tokens};
  std::optional<text::StreamingDecoder> decoder;
  if (speaks) {
    if (!flags.ignore_eos) limits.stop_ids = (*text)->stop_ids;
    decoder.emplace(*(*text)->tokenizer, /*skip_special_tokens=*/true);
  }
  bool first = true;
  auto print = [&](int32_t id) -> absl::Status {
    if (decoder) {
      absl::StatusOr<std::string> piece = decoder->Push(id);
      if (!piece.ok()) return piece.status();
      std::fwrite(piece->data(), 1, piece->size(), stdout);
    } else {
      std::printf("%s%d", first ? "" : ",", id);
    }
    first = false;
    std::fflush(stdout);  // stream as it is generated
    return absl::OkStatus();
  };
  Sampler sampler(flags.sampling);
  auto generated = Generate(**session, sampler, *logits, limits, print);
  if (decoder) {
    const std::string rest = decoder->Flush();
    std::fwrite(rest.data(), 1, rest.size(), stdout);
  }
  std::printf("\n");
  std::fflush(stdout);
  if (!generated.ok()) return generated.status();
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
  cmd->add_option("prompt", flags->prompt, "The prompt: text, or token ids with --ids")->required();
  cmd->add_option("-n,--max-tokens", flags->max_tokens, "Tokens to generate")
      ->capture_default_str();
  cmd->add_flag("--raw", flags->raw, "Continue the prompt as is, without the chat template");
  cmd->add_option("--system", flags->system, "A system message for the chat template");
  AddTemplateFlags(cmd, flags->template_flags);
  cmd->add_flag("--ids", flags->ids, "The prompt and the output are token ids");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "Generate all -n tokens, past end-of-text");
  AddSamplingFlags(cmd, flags->sampling);
  cmd->add_flag("--stages", flags->stages, "Also print the time per pipeline stage");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
