// computed tokenize --tokenizer PATH "text"          prints the ids, comma-separated
// computed tokenize --tokenizer PATH --decode 1,2,3  prints the text
// PATH is a tokenizer.json, a tiktoken file or a .warp container.

#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "computed/cli/commands.h"
#include "computed/cli/token_ids.h"
#include "computed/run/model_text.h"

namespace warp::computed {
namespace {

struct TokenizeFlags {
  std::string tokenizer;
  std::string text;
  std::string decode;
  bool add_special_tokens = false;
  bool skip_special_tokens = false;
  std::string tiktoken_pattern;
};

absl::Status Run(const TokenizeFlags& flags) {
  if (!flags.text.empty() && !flags.decode.empty()) {
    return absl::InvalidArgumentError("give either the text or --decode IDS, not both");
  }
  auto model_text = LoadModelText(flags.tokenizer, {.tiktoken_pattern = flags.tiktoken_pattern});
  if (!model_text.ok()) return model_text.status();
  const text::Tokenizer& tokenizer = *model_text->tokenizer;
  if (!flags.decode.empty()) {
    auto ids = ParseTokenIds(flags.decode, "--decode");
    if (!ids.ok()) return ids.status();
    auto decoded = tokenizer.Decode(*ids, flags.skip_special_tokens);
    if (!decoded.ok()) return decoded.status();
    std::printf("%s\n", decoded->c_str());
    return absl::OkStatus();
  }
  auto ids = tokenizer.Encode(flags.text, flags.add_special_tokens);
  if (!ids.ok()) return ids.status();
  // A tokenizer may add tokens the model has no row for (a container's
  // tokenizer.json from another release): said here, not left to the run.
  for (int32_t id : *ids) {
    if (model_text->vocab_size == 0 || id < static_cast<int64_t>(model_text->vocab_size)) continue;
    auto piece = tokenizer.Decode({id}, /*skip_special_tokens=*/false);
    return absl::OutOfRangeError(absl::StrCat(
        "the text encodes to token ", id, piece.ok() ? " (\"" + *piece + "\")" : std::string(),
        ", past the model's vocabulary of ", model_text->vocab_size, " (", flags.tokenizer,
        "): its tokenizer adds tokens the model cannot embed"));
  }
  std::printf("%s\n", FormatTokenIds(*ids).c_str());
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddTokenizeCommand(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = app.add_subcommand("tokenize", "Text to token ids, or ids to text (--decode)");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "A tokenizer.json, a tiktoken file or a .warp container")
      ->required();
  cmd->add_option("text", flags->text, "The text to encode");
  cmd->add_option("--decode", flags->decode, "Comma-separated ids to decode instead");
  cmd->add_flag("--add-special-tokens", flags->add_special_tokens,
                "Apply the tokenizer's post-processor (e.g. prepend BOS)");
  cmd->add_flag("--skip-special-tokens", flags->skip_special_tokens,
                "Leave special tokens out of decoded text");
  cmd->add_option("--tiktoken-pattern", flags->tiktoken_pattern,
                  "Pre-tokenization of a tiktoken file: kimi (default), cl100k_base, o200k_base "
                  "or a regex");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
