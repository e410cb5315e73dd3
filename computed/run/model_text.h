#pragma once

// Where a model's text layer comes from: the tokenizer and chat template a
// .warp container names in its manifest, or a tokenizer file given directly
// (tokenizer.json, or a tiktoken BPE file with a tokenizer_config.json beside
// it), plus the ids that end a generation.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "computed/chat/chat_template.h"
#include "computed/text/tokenizer.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

// Thread-compatible; the tokenizer inside is immutable.
struct ModelText {
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::optional<chat::ChatTemplate> chat_template;  // absent when the release has none
  // The template's special-token variables from tokenizer_config.json
  // (ChatTemplate::SpecialTokensOf), kept for a --chat-template that replaces it.
  nlohmann::json special_tokens = nlohmann::json::object();
  std::set<int32_t> stop_ids;  // eos_token_id of config.json and generation_config.json
  uint32_t max_positions = 0;  // config.json max_position_embeddings; 0 when unknown
  uint32_t vocab_size = 0;     // the model's (a container's config); 0 when unknown
};

// PATH is a .warp container, a tokenizer.json or a tiktoken file. A container
// without tokenizer files is NotFound, naming it. `options` matter for
// tiktoken files only (their pre-tokenization pattern).
absl::StatusOr<ModelText> LoadModelText(const std::filesystem::path& path,
                                        const text::LoadOptions& options = {});
// The same for a container already open.
absl::StatusOr<ModelText> LoadModelText(const Container& container,
                                        const text::LoadOptions& options = {});

}  // namespace warp::computed
