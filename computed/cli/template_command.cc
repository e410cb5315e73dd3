// computed template --tokenizer PATH --messages FILE.json [--add-generation-prompt]
// Prints the prompt the model's chat template renders for a conversation.

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/status.h"
#include "computed/cli/commands.h"
#include "computed/cli/model_text.h"

namespace warp::computed {
namespace {

struct TemplateFlags {
  std::string tokenizer;
  std::string messages;
  bool add_generation_prompt = false;
};

// FILE.json is a list of {"role", "content"} messages, or {"messages": [...]}.
absl::StatusOr<nlohmann::json> ReadMessages(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  WARP_RETURN_IF_ERROR(CheckJsonDepth(*text, path));
  nlohmann::json value = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return absl::InvalidArgumentError(path + ": not valid JSON");
  if (value.is_object() && value.contains("messages")) value = value["messages"];
  if (!value.is_array()) {
    return absl::InvalidArgumentError(
        path + ": expected a list of {\"role\", \"content\"} messages or {\"messages\": [...]}");
  }
  for (size_t i = 0; i < value.size(); ++i) {
    if (!value[i].is_object() || !value[i].contains("role") || !value[i]["role"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": messages[", i, "]: expected an object with a string \"role\""));
    }
  }
  return value;
}

absl::Status Run(const TemplateFlags& flags) {
  auto messages = ReadMessages(flags.messages);
  if (!messages.ok()) return messages.status();
  auto model_text = LoadModelText(flags.tokenizer);
  if (!model_text.ok()) return model_text.status();
  if (!model_text->chat_template) {
    return absl::NotFoundError(flags.tokenizer + ": no chat template");
  }
  auto prompt = model_text->chat_template->Render(*messages, flags.add_generation_prompt);
  if (!prompt.ok()) return prompt.status();
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddTemplateCommand(CLI::App& app) {
  auto flags = std::make_shared<TemplateFlags>();
  CLI::App* cmd = app.add_subcommand("template", "Render a conversation with the chat template");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "A .warp container, or a tokenizer file with tokenizer_config.json beside it")
      ->required();
  cmd->add_option("--messages", flags->messages, "A JSON file: [{\"role\", \"content\"}, ...]")
      ->required();
  cmd->add_flag("--add-generation-prompt", flags->add_generation_prompt,
                "End with the cue for the assistant's turn");
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
