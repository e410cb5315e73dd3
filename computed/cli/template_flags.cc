#include "computed/cli/template_flags.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/status.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
// Ordered: a tool definition keeps its file's key order in the render.
using json = nlohmann::ordered_json;

// Variables apply_chat_template sets itself; transformers refuses them as
// kwargs (a duplicate keyword argument), so we do too, naming the flag to use.
constexpr std::pair<const char*, const char*> kReservedVariables[] = {
    {"messages", "the conversation (--messages, or the prompt)"},
    {"tools", "--tools FILE.json"},
    {"documents", "apply_chat_template (not supported)"},
    {"add_generation_prompt", "the command"},
};

// `text` parsed as JSON; InvalidArgument starting with `where`.
absl::StatusOr<json> ParseJson(const std::string& text, const std::string& where) {
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, where));
  try {  // nlohmann reports the position only through its exception
    return json::parse(text);
  } catch (const json::exception& error) {  // parse_error, or out_of_range (1e400)
    return absl::InvalidArgumentError(absl::StrCat(where, ": not valid JSON: ", error.what()));
  }
}

absl::StatusOr<std::string> ReadFlagFile(const char* flag, const std::string& path) {
  std::error_code error;
  if (!fs::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat(flag, " ", path, ": no such file"));
  }
  if (!fs::is_regular_file(path, error)) {
    return absl::InvalidArgumentError(absl::StrCat(flag, " ", path, ": not a file"));
  }
  absl::StatusOr<std::string> text = ReadFileToString(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat(flag, ": ", std::string(text.status().message())));
  }
  return text;
}

absl::StatusOr<json> ReadTools(const std::string& path) {
  const std::string where = absl::StrCat("--tools ", path);
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFlagFile("--tools", path));
  WARP_ASSIGN_OR_RETURN(json tools, ParseJson(text, where));
  if (!tools.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": expected a JSON array of tool definitions, got ", tools.type_name()));
  }
  for (size_t i = 0; i < tools.size(); ++i) {
    if (!tools[i].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": [", i,
                       "]: expected an object (a tool definition such as "
                       "{\"type\": \"function\", \"function\": {...}}), got ",
                       tools[i].type_name()));
    }
  }
  return tools;
}

absl::StatusOr<json> ParseKwargs(const std::string& text) {
  WARP_ASSIGN_OR_RETURN(json kwargs, ParseJson(text, "--template-kwargs"));
  if (!kwargs.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--template-kwargs: expected a JSON object such as {\"enable_thinking\": false}, got ",
        kwargs.type_name()));
  }
  for (const auto& [name, source] : kReservedVariables) {
    if (kwargs.contains(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--template-kwargs: \"", name, "\" is not a template kwarg; it comes from ", source));
    }
  }
  return kwargs;
}

// A tokenizer_config.json brings its own special tokens; a .jinja file gets
// those of the model (none without one).
absl::StatusOr<chat::ChatTemplate> LoadChatTemplate(const std::string& path,
                                                    const nlohmann::json& special_tokens) {
  WARP_ASSIGN_OR_RETURN(std::string source, ReadFlagFile("--chat-template", path));
  absl::StatusOr<chat::ChatTemplate> loaded =
      absl::EndsWith(path, ".json")
          ? chat::ChatTemplate::Load(path)
          : chat::ChatTemplate::FromSource(std::move(source), path, special_tokens);
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("--chat-template: ", std::string(loaded.status().message())));
  }
  return loaded;
}

}  // namespace

void AddTemplateFlags(CLI::App* cmd, TemplateFlags& flags) {
  cmd->add_option("--chat-template", flags.chat_template,
                  "Render with this chat template: a .jinja file, or a tokenizer_config.json");
  cmd->add_option("--tools", flags.tools,
                  "A JSON file: an array of OpenAI-style tool definitions, passed as `tools`");
  cmd->add_option("--template-kwargs", flags.template_kwargs,
                  "A JSON object of template variables, e.g. '{\"enable_thinking\": false}'");
}

absl::StatusOr<json> ApplyTemplateFlags(const TemplateFlags& flags, ModelText& text) {
  json context = json::object();
  if (!flags.template_kwargs.empty()) {
    WARP_ASSIGN_OR_RETURN(context, ParseKwargs(flags.template_kwargs));
  }
  if (!flags.tools.empty()) {
    WARP_ASSIGN_OR_RETURN(context["tools"], ReadTools(flags.tools));
  }
  if (!flags.chat_template.empty()) {
    WARP_ASSIGN_OR_RETURN(text.chat_template,
                          LoadChatTemplate(flags.chat_template, text.special_tokens));
  }
  if (!text.chat_template && !context.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat(flags.tools.empty() ? "--template-kwargs" : "--tools",
                     ": the model has no chat template to pass them to; give one with "
                     "--chat-template FILE"));
  }
  return context;
}

}  // namespace warp::computed
