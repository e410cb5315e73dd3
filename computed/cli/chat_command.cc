// computed chat MODEL.warp [--system TEXT] [-n N] [--context N] [template options] [sampling]
//               [engine options]
// An interactive session: one line per user turn, the reply streams as it is
// generated, the history stays in the KV cache. Ctrl-C stops a reply (or
// clears the line being typed); Ctrl-D quits.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "computed/cli/commands.h"
#include "computed/cli/interrupt.h"
#include "computed/cli/prompt_cache_flags.h"
#include "computed/cli/session_flags.h"
#include "computed/cli/template_flags.h"
#include "computed/run/conversation.h"
#include "computed/run/generation.h"
#include "computed/run/model_text.h"
#include "computed/text/utf8.h"

namespace warp::computed {
namespace {

struct ChatFlags {
  SessionFlags session;
  std::string system;
  uint32_t max_tokens = 256;
  uint32_t context = 0;  // 0: the model's trained context, at most kDefaultContext
  bool ignore_eos = false;
  SamplerOptions sampling;
  TemplateFlags template_flags;
  PromptCacheFlags prompt_cache;
};

// KV positions when --context is not given: a chat, not a book.
constexpr uint32_t kDefaultContext = 4096;

enum class LineResult { kLine, kInterrupted, kEnd };

// One line from stdin; a Ctrl-C while typing interrupts the read (EINTR).
LineResult ReadLine(std::string& line) {
  char* buffer = nullptr;
  size_t capacity = 0;
  errno = 0;
  const ssize_t n = ::getline(&buffer, &capacity, stdin);
  const int error = errno;
  if (n >= 0) line.assign(buffer, static_cast<size_t>(n));
  std::free(buffer);
  if (n < 0) {
    std::clearerr(stdin);
    return error == EINTR ? LineResult::kInterrupted : LineResult::kEnd;
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
  return LineResult::kLine;
}

// Streams one reply; returns its text.
absl::StatusOr<std::string> Reply(Session& session, Conversation& conversation,
                                  const ModelText& text, Sampler& sampler, const ChatFlags& flags) {
  const auto start = std::chrono::steady_clock::now();
  auto logits = conversation.Prepare(flags.max_tokens + 1);
  if (!logits.ok()) return logits.status();
  GenerationLimits limits{.max_tokens = flags.max_tokens,
                          .stop_ids = flags.ignore_eos ? std::set<int32_t>() : text.stop_ids,
                          .interrupted = &InterruptScope::flag(),
                          .feed_last = true};
  text::StreamingDecoder decoder(*text.tokenizer, /*skip_special_tokens=*/true);
  std::string reply;
  auto stream = [&](int32_t id) -> absl::Status {
    conversation.Fed(id);
    absl::StatusOr<std::string> piece = decoder.Push(id);
    if (!piece.ok()) return piece.status();
    reply += *piece;
    std::fwrite(piece->data(), 1, piece->size(), stdout);
    std::fflush(stdout);
    return absl::OkStatus();
  };
  auto generated = Generate(session, sampler, *logits, limits, stream);
  if (generated.ok()) conversation.SaveToDisk();  // the next turn starts with it
  const std::string rest = decoder.Flush();
  reply += rest;
  std::printf("%s\n", rest.c_str());
  std::fflush(stdout);
  if (!generated.ok()) return generated.status();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::fprintf(stderr, "[%zu tokens %.1f tok/s | prompt %u new + %u from the KV cache%s%s]\n",
               generated->ids.size(), generated->ids.size() / std::max(seconds, 1e-9),
               conversation.new_tokens(), conversation.reused_tokens(),
               conversation.disk_tokens() > 0
                   ? absl::StrCat(" (", conversation.disk_tokens(), " loaded from disk)").c_str()
                   : "",
               generated->interrupted ? " | stopped by Ctrl-C" : "");
  return reply;
}

absl::Status Run(const ChatFlags& flags) {
  auto text = LoadModelText(flags.session.options.model);
  if (!text.ok()) return text.status();
  auto template_context = ApplyTemplateFlags(flags.template_flags, *text);
  if (!template_context.ok()) return template_context.status();
  if (!text->chat_template) {
    return absl::FailedPreconditionError(
        absl::StrCat(flags.session.options.model,
                     ": the model has no chat template; use computed run --raw, or give one "
                     "with --chat-template FILE"));
  }
  uint32_t context = flags.context;
  if (context == 0) {
    context =
        text->max_positions ? std::min(text->max_positions, kDefaultContext) : kDefaultContext;
  }
  auto options = ResolveSessionOptions(flags.session, context);
  if (!options.ok()) return options.status();
  auto session = Session::Open(*options);
  if (!session.ok()) return session.status();
  auto disk_cache = OpenPromptCache(flags.prompt_cache, **session);
  if (!disk_cache.ok()) return disk_cache.status();
  Conversation conversation(**session, *text, *std::move(template_context), disk_cache->get());
  if (!flags.system.empty()) conversation.Add("system", flags.system);
  Sampler sampler(flags.sampling);
  InterruptScope interrupts;
  const bool interactive = ::isatty(STDIN_FILENO);
  std::fprintf(stderr, "chat: Enter sends, Ctrl-C stops a reply, Ctrl-D quits\n");
  while (true) {
    if (interactive) std::fprintf(stderr, "> ");
    std::string line;
    const LineResult result = ReadLine(line);
    if (result == LineResult::kEnd) break;
    InterruptScope::flag().store(false);
    if (result == LineResult::kInterrupted) {
      std::fprintf(stderr, "\n");
      continue;
    }
    if (line.empty()) continue;
    // A turn that cannot be taken is refused alone: the session goes on.
    if (absl::Status utf8 = text::CheckUtf8(line, "that line"); !utf8.ok()) {
      std::fprintf(stderr, "chat: %s; it was not sent\n", std::string(utf8.message()).c_str());
      continue;
    }
    conversation.Add("user", line);
    absl::StatusOr<std::string> reply = Reply(**session, conversation, *text, sampler, flags);
    if (absl::IsResourceExhausted(reply.status())) {  // the context is full: nothing was fed
      conversation.RemoveLast();
      std::fprintf(stderr, "chat: %s; that turn was not sent (a shorter one may fit)\n",
                   std::string(reply.status().message()).c_str());
      continue;
    }
    if (!reply.ok()) return reply.status();
    conversation.Add("assistant", *reply);
    InterruptScope::flag().store(false);
  }
  if (interactive) std::fprintf(stderr, "\n");
  absl::Status finished = (*session)->Finish();
  std::fprintf(stderr, "%s\n", (*session)->StatsLine().c_str());
  return finished;
}

}  // namespace

CommandRunner AddChatCommand(CLI::App& app) {
  auto flags = std::make_shared<ChatFlags>();
  CLI::App* cmd =
      app.add_subcommand("chat", "Talk with a model; the history stays in the KV cache");
  AddSessionFlags(cmd, flags->session);
  AddPromptCacheFlags(cmd, flags->prompt_cache);
  cmd->add_option("--system", flags->system, "A system message to start the conversation");
  AddTemplateFlags(cmd, flags->template_flags);
  cmd->add_option("-n,--max-tokens", flags->max_tokens, "Longest reply, in tokens")
      ->capture_default_str();
  cmd->add_option("--context", flags->context,
                  "KV cache positions for the whole conversation (default: the model's "
                  "max_position_embeddings, at most 4096)");
  cmd->add_flag("--ignore-eos", flags->ignore_eos, "Reply with all -n tokens, past end-of-turn");
  AddSamplingFlags(cmd, flags->sampling);
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
