#include "computed/api/model_state.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/format/container.h"
#include "common/status.h"
#include "computed/api/chat_input.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/planner/planner.h"
#include "computed/run/sources.h"

namespace warp::api {
namespace {

namespace fs = std::filesystem;
using computed::ModelText;
using computed::SessionOptions;

// KV positions when the caller does not say: a chat, not a book (as `computed chat`).
constexpr uint32_t kDefaultContext = 4096;
// Bounds the counts an option may ask for, as the CLI's flags do.
constexpr uint32_t kMaxThreads = 1024;   // compute threads: far above any core count
constexpr uint32_t kMaxIoThreads = 256;  // reads in flight: far above any disk's queue

std::string OrEmpty(const char* text) { return text != nullptr ? text : ""; }

absl::Status CheckCounts(const warp_model_options& options) {
  if (options.threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.threads: ", options.threads, " is more than ", kMaxThreads));
  }
  if (options.io_threads > kMaxIoThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.io_threads: ", options.io_threads, " is more than ", kMaxIoThreads));
  }
  if (options.context_positions > computed::kMaxContextTokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.context_positions: ", options.context_positions, " is more than ",
                     computed::kMaxContextTokens));
  }
  return absl::OkStatus();
}

// A comma-separated list option: NULL is "not given"; given, it must name
// something in every entry (an empty one would silently mean the default).
absl::Status CheckList(const char* field, const char* list) {
  if (list == nullptr) return absl::OkStatus();
  const std::vector<std::string> entries = absl::StrSplit(list, ',');
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!absl::StripAsciiWhitespace(entries[i]).empty()) continue;
    return absl::InvalidArgumentError(absl::StrCat(
        "options.", field, ": \"", list, "\" ",
        entries.size() == 1 ? std::string("is empty (NULL for none)")
                            : absl::StrCat("has an empty entry (", i + 1, " of ", entries.size(),
                                           ")")));
  }
  return absl::OkStatus();
}

// options.activations: NULL or "q8" is true, "f32" false.
absl::StatusOr<bool> WantsQ8Activations(const warp_model_options& options) {
  const std::string activations = OrEmpty(options.activations);
  if (activations.empty() || activations == "q8") return true;
  if (activations == "f32") return false;
  return absl::InvalidArgumentError(
      absl::StrCat("options.activations: \"", activations, "\" is not f32 or q8"));
}

// options.expert_compute: NULL is auto.
absl::StatusOr<computed::ExpertCompute> ExpertComputeOf(const warp_model_options& options) {
  const std::string mode = OrEmpty(options.expert_compute);
  if (mode.empty()) return computed::ExpertCompute::kAuto;
  absl::StatusOr<computed::ExpertCompute> parsed = computed::ParseExpertCompute(mode);
  if (parsed.ok()) return parsed;
  return absl::InvalidArgumentError(absl::StrCat("options.expert_compute: \"", mode,
                                                 "\" is not auto, records or daemons"));
}

// A path that is missing or not a container directory, said plainly before
// Container::Open reports the manifest it could not find.
absl::Status CheckModelPath(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("options.path: empty (give MODEL.warp)");
  std::error_code error;
  if (!fs::exists(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such file or directory"));
  }
  if (!fs::is_directory(path, error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a directory (a model is a NAME.warp directory)"));
  }
  if (!fs::exists(fs::path(path) / "manifest.json", error)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": not a .warp container (no manifest.json); make one with computed "
                     "convert"));
  }
  return absl::OkStatus();
}

// The C options into the session's tree; what they leave unset (0, null)
// keeps the tree's default, the one the command line starts from.
SessionOptions ToSessionOptions(const warp_model_options& options, uint32_t context,
                                bool q8_activations, computed::ExpertCompute expert_compute) {
  SessionOptions session{.model = options.path};
  computed::SourceOptions& source = session.source;
  source.bank_dirs = computed::SplitList(OrEmpty(options.bank_dirs));
  source.stores = computed::SplitList(OrEmpty(options.stores));
  if (options.io_threads != 0) source.store.io_threads = options.io_threads;
  source.tls = {.ca = OrEmpty(options.tls_ca),
                .cert = OrEmpty(options.tls_cert),
                .key = OrEmpty(options.tls_key),
                .token_file = OrEmpty(options.token_file)};
  if (options.store_timeout_ms != 0) {
    source.store_retry_deadline = std::chrono::milliseconds(options.store_timeout_ms);
  }
  source.expert_compute = expert_compute;
  session.engine.max_positions = context;
  session.compute = {.threads = options.threads, .q8_activations = q8_activations};
  session.run.prefill_chunk = options.prefill_chunk;
  if (options.budget_bytes != 0) session.run.budget_bytes = options.budget_bytes;
  return session;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const ModelState>> ModelState::Open(
    const warp_model_options& options) {
  WARP_RETURN_IF_ERROR(CheckCounts(options));
  WARP_RETURN_IF_ERROR(CheckList("stores", options.stores));
  WARP_RETURN_IF_ERROR(CheckList("bank_dirs", options.bank_dirs));
  WARP_ASSIGN_OR_RETURN(const bool q8_activations, WantsQ8Activations(options));
  WARP_ASSIGN_OR_RETURN(const computed::ExpertCompute expert_compute, ExpertComputeOf(options));
  const std::string path = OrEmpty(options.path);
  WARP_RETURN_IF_ERROR(CheckModelPath(path));
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<Container> container, Container::Open(path));
  const Manifest& manifest = container->manifest();
  WARP_ASSIGN_OR_RETURN(computed::ModelConfig config,
                        computed::ParseModelConfig(manifest.architecture, manifest.config));
  auto state = std::shared_ptr<ModelState>(new ModelState());
  state->vocab_size_ = config.vocab_size;
  if (manifest.tokenizer) {
    WARP_ASSIGN_OR_RETURN(ModelText text, computed::LoadModelText(*container));
    state->text_ = std::move(text);
  }
  uint32_t context = options.context_positions;
  if (context == 0) {
    const uint32_t trained = config.max_position_embeddings;
    context = trained ? std::min(trained, kDefaultContext) : kDefaultContext;
  }
  state->session_options_ = ToSessionOptions(options, context, q8_activations, expert_compute);
  state->prompt_cache_dir_ = OrEmpty(options.prompt_cache_dir);
  state->prompt_cache_bytes_ = options.prompt_cache_bytes ? options.prompt_cache_bytes
                                                          : uint64_t{20} << 30;
  return state;
}

absl::StatusOr<std::shared_ptr<computed::DiskPromptCache>> ModelState::PromptCache(
    const std::string& key) const {
  if (prompt_cache_dir_.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(prompt_cache_mutex_);
  if (prompt_cache_ == nullptr) {
    WARP_ASSIGN_OR_RETURN(std::unique_ptr<computed::DiskPromptCache> cache,
                          computed::DiskPromptCache::Open({.dir = prompt_cache_dir_,
                                                           .max_bytes = prompt_cache_bytes_,
                                                           .key = key}));
    prompt_cache_ = std::move(cache);
  }
  return prompt_cache_;
}

absl::StatusOr<const ModelText*> ModelState::RequireText() const {
  if (!text_) {
    return absl::FailedPreconditionError(
        absl::StrCat(session_options_.model,
                     ": the model has no tokenizer (manifest \"tokenizer\" is null); it takes "
                     "token ids only"));
  }
  return &*text_;
}

absl::StatusOr<std::vector<int32_t>> ModelState::Tokenize(std::string_view text,
                                                          bool add_special_tokens) const {
  WARP_ASSIGN_OR_RETURN(const ModelText* model_text, RequireText());
  return model_text->tokenizer->Encode(text, add_special_tokens);
}

absl::StatusOr<std::string> ModelState::Detokenize(std::span<const int32_t> ids,
                                                   bool skip_special_tokens) const {
  WARP_ASSIGN_OR_RETURN(const ModelText* model_text, RequireText());
  const int32_t vocab = model_text->tokenizer->vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return absl::OutOfRangeError(absl::StrCat(
          "ids[", i, "]: token ", ids[i], " is outside the tokenizer's vocabulary of ", vocab));
    }
  }
  return model_text->tokenizer->Decode({ids.data(), ids.size()}, skip_special_tokens);
}

absl::StatusOr<std::string> ModelState::ApplyChatTemplate(std::string_view messages_json,
                                                          bool add_generation_prompt,
                                                          const char* tools_json,
                                                          const char* template_kwargs_json) const {
  WARP_ASSIGN_OR_RETURN(const ModelText* model_text, RequireText());
  WARP_ASSIGN_OR_RETURN(nlohmann::ordered_json messages, ParseMessages(messages_json));
  WARP_ASSIGN_OR_RETURN(nlohmann::ordered_json context,
                        ParseTemplateContext(tools_json, template_kwargs_json));
  if (!model_text->chat_template) {
    return absl::FailedPreconditionError(
        absl::StrCat(session_options_.model, ": the model has no chat template"));
  }
  return model_text->chat_template->RenderOrdered(messages, add_generation_prompt, context);
}

}  // namespace warp::api
