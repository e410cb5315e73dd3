// computed template [--tokenizer PATH] [--chat-template FILE] --messages FILE.json
//                   [--tools FILE.json] [--template-kwargs JSON] [--add-generation-prompt]
// Prints the prompt the model's chat template (or --chat-template) renders
// for a conversation.

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/status.h"
#include "computed/cli/commands.h"
#include "computed/cli/template_flags.h"
#include "computed/run/model_text.h"

namespace warp::computed {
namespace {

struct TemplateCommandFlags {
  std::string tokenizer;
  std::string messages;
  bool add_generation_prompt = false;
  TemplateFlags template_flags;
};

// FILE.json is a list of {"role", "content"} messages, or {"messages": [...]}.
absl::StatusOr<nlohmann::ordered_json> ReadMessages(const std::string& path) {
  auto text = ReadFileToString(path);
  if (!text.ok()) return text.status();
  WARP_RETURN_IF_ERROR(CheckJsonDepth(*text, path));
  nlohmann::ordered_json value =
      nlohmann::ordered_json::parse(*text, nullptr, /*allow_exceptions=*/false);
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

absl::Status Run(const TemplateCommandFlags& flags) {
  if (flags.tokenizer.empty() && flags.template_flags.chat_template.empty()) {
    return absl::InvalidArgumentError("give --tokenizer PATH, --chat-template FILE, or both");
  }
  auto messages = ReadMessages(flags.messages);
  if (!messages.ok()) return messages.status();
  ModelText model_text;  // with --chat-template alone: no tokenizer, no special tokens
  if (!flags.tokenizer.empty()) {
    auto loaded = LoadModelText(flags.tokenizer);
    if (!loaded.ok()) return loaded.status();
    model_text = *std::move(loaded);
  }
  auto context = ApplyTemplateFlags(flags.template_flags, model_text);
  if (!context.ok()) return context.status();
  if (!model_text.chat_template) {
    return absl::NotFoundError(flags.tokenizer +
                               ": no chat template (give one with --chat-template FILE)");
  }
  auto prompt =
      model_text.chat_template->RenderOrdered(*messages, flags.add_generation_prompt, *context);
  if (!prompt.ok()) return prompt.status();
  std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  return absl::OkStatus();
}

}  // namespace

CommandRunner AddTemplateCommand(CLI::App& app) {
  auto flags = std::make_shared<TemplateCommandFlags>();
  CLI::App* cmd = app.add_subcommand("template", "Render a conversation with the chat template");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "A .warp container, or a tokenizer file with tokenizer_config.json beside it "
                  "(not needed with --chat-template)");
  cmd->add_option("--messages", flags->messages, "A JSON file: [{\"role\", \"content\"}, ...]")
      ->required();
  cmd->add_flag("--add-generation-prompt", flags->add_generation_prompt,
                "End with the cue for the assistant's turn");
  AddTemplateFlags(cmd, flags->template_flags);
  return MakeRunner(cmd, [flags] { return Run(*flags); });
}

}  // namespace warp::computed
