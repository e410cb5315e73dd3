#include "computed/run/model_text.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/logging.h"
#include "common/status.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Tokenizer files in the order they are preferred when a release ships several.
constexpr const char* kTokenizerPreference[] = {"tokenizer.json", "tiktoken.model"};

absl::StatusOr<json> ReadJson(const fs::path& path) {
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, path.string()));
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return absl::InvalidArgumentError(path.string() + ": not valid JSON");
  return value;
}

// eos_token_id is an int or a list of ints in both files. A value that is
// none, or an id past the model's vocabulary (`vocab`, 0: unknown), could
// never stop a reply: it is left out, with a warning naming it.
void AddStopIds(const json& config, uint32_t vocab, const std::string& file,
                std::set<int32_t>& ids) {
  auto it = config.find("eos_token_id");
  if (it == config.end() || it->is_null()) return;
  auto add = [&](const json& id) {
    if (id.is_number_integer() && id.get<int64_t>() >= 0 &&
        (vocab == 0 || id.get<int64_t>() < vocab)) {
      ids.insert(static_cast<int32_t>(id.get<int64_t>()));
      return;
    }
    Logger("computed").warn(
        "{}: eos_token_id {} is not a token id of the model ({}); it will not stop replies",
        file, id.dump(), vocab ? absl::StrCat("0 to ", vocab - 1) : "an integer of at least 0");
  };
  if (it->is_array()) {
    for (const json& id : *it) add(id);
  } else {
    add(*it);
  }
}

// The special-token variables a template refers to (bos_token, eos_token, ...),
// as transformers passes them; none without a tokenizer_config.json.
absl::StatusOr<json> SpecialTokens(const fs::path& tokenizer_config) {
  if (!fs::exists(tokenizer_config)) return json::object();
  WARP_ASSIGN_OR_RETURN(json config, ReadJson(tokenizer_config));
  return chat::ChatTemplate::SpecialTokensOf(config, tokenizer_config.string());
}

absl::StatusOr<ModelText> LoadFromContainer(const Container& container,
                                            const text::LoadOptions& options) {
  const fs::path& dir = container.dir();
  const Manifest& manifest = container.manifest();
  ModelText text;
  // Where the family keeps it (Kimi K3: under text_config); 0 if the config is bad,
  // which the session refuses with the reason.
  absl::StatusOr<ModelConfig> config = ParseModelConfig(manifest.architecture, manifest.config);
  text.max_positions = config.ok() ? config->max_position_embeddings : 0;
  text.vocab_size = config.ok() ? config->vocab_size : 0;
  AddStopIds(manifest.config, text.vocab_size, (dir / "manifest.json").string() + " config",
             text.stop_ids);
  if (!manifest.tokenizer) {
    return absl::NotFoundError(
        absl::StrCat(dir.string(),
                     ": the container has no tokenizer (manifest \"tokenizer\" is "
                     "null); give token ids, or convert a release that ships one"));
  }
  const std::vector<std::string>& files = manifest.tokenizer->files;
  for (const char* name : kTokenizerPreference) {
    if (std::find(files.begin(), files.end(), name) == files.end()) continue;
    WARP_ASSIGN_OR_RETURN(const fs::path path, container.ContainedFile(name));
    WARP_ASSIGN_OR_RETURN(text.tokenizer, text::Tokenizer::Load(path, options));
    break;
  }
  if (text.tokenizer == nullptr) {
    return absl::NotFoundError(absl::StrCat(dir.string(),
                                            ": the manifest names no tokenizer.json or "
                                            "tiktoken.model among its tokenizer files"));
  }
  WARP_ASSIGN_OR_RETURN(const fs::path tokenizer_config,
                        container.ContainedFile("tokenizer_config.json"));
  WARP_ASSIGN_OR_RETURN(text.special_tokens, SpecialTokens(tokenizer_config));
  if (!manifest.tokenizer->chat_template.empty()) {
    WARP_ASSIGN_OR_RETURN(const fs::path source_path,
                          container.ContainedFile(manifest.tokenizer->chat_template));
    WARP_ASSIGN_OR_RETURN(std::string source, ReadFileToString(source_path));
    WARP_ASSIGN_OR_RETURN(text.chat_template,
                          chat::ChatTemplate::FromSource(std::move(source), source_path.string(),
                                                         text.special_tokens));
  }
  if (fs::exists(dir / "generation_config.json")) {
    WARP_ASSIGN_OR_RETURN(const fs::path generation_path,
                          container.ContainedFile("generation_config.json"));
    WARP_ASSIGN_OR_RETURN(json generation, ReadJson(generation_path));
    AddStopIds(generation, text.vocab_size, generation_path.string(), text.stop_ids);
  }
  return text;
}

// A tokenizer file given directly; the chat template comes from the
// tokenizer_config.json beside it, when there is one with a template.
absl::StatusOr<ModelText> LoadFromTokenizerFile(const fs::path& path,
                                                const text::LoadOptions& options) {
  ModelText text;
  WARP_ASSIGN_OR_RETURN(text.tokenizer, text::Tokenizer::Load(path, options));
  const fs::path config = path.parent_path() / "tokenizer_config.json";
  if (fs::exists(config)) {
    absl::StatusOr<chat::ChatTemplate> chat_template = chat::ChatTemplate::Load(config);
    if (chat_template.ok()) {
      text.special_tokens = chat_template->special_tokens();
      text.chat_template = *std::move(chat_template);
    } else if (absl::IsNotFound(chat_template.status())) {
      WARP_ASSIGN_OR_RETURN(text.special_tokens, SpecialTokens(config));
    } else {
      return chat_template.status();
    }
  }
  return text;
}

}  // namespace

absl::StatusOr<ModelText> LoadModelText(const fs::path& path, const text::LoadOptions& options) {
  if (fs::is_directory(path)) {
    WARP_ASSIGN_OR_RETURN(std::unique_ptr<Container> container, Container::Open(path));
    return LoadFromContainer(*container, options);
  }
  if (!fs::exists(path)) return absl::NotFoundError(path.string() + ": no such file");
  return LoadFromTokenizerFile(path, options);
}

absl::StatusOr<ModelText> LoadModelText(const Container& container,
                                        const text::LoadOptions& options) {
  return LoadFromContainer(container, options);
}

}  // namespace warp::computed
