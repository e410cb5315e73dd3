#pragma once

// ImportGguf: a GGUF model (one file, or a split set NAME-00001-of-0000N.gguf)
// as the converter's input: the Hugging Face config.json its hyper-parameters
// stand for, and its tensors under the family's Hugging Face names, pointing
// at the GGUF bytes (the fused [experts, rows, cols] expert tensors as one
// tensor per expert). Block types keep their bytes (ggml_* formats); a type
// WARP cannot compute, an unknown architecture, a missing key or a tensor no
// rule maps is refused by name. The architecture maps are gguf_architectures.h.
//
// Thread-safe: ImportGguf is a pure function of the files.

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/convert/gguf_tokenizer.h"
#include "computed/convert/safetensors.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

struct GgufImport {
  std::string architecture;       // general.architecture ("qwen3moe")
  nlohmann::ordered_json config;  // config.json, with the family's model_type
  std::unique_ptr<Checkpoint> checkpoint;
  std::optional<std::string> chat_template;  // tokenizer.chat_template
  std::optional<GgufTokenizerFiles> tokenizer;  // from tokenizer.ggml.*
  // "KEY = VALUE" for each missing key a default was taken for (logged at info).
  std::vector<std::string> defaults_taken;
  // "<arch>.*" keys nothing read: misspelled, or a feature WARP lacks (logged as a warning).
  std::vector<std::string> unread_keys;
};

// True for a path that names a GGUF file rather than a Hugging Face directory.
bool IsGgufPath(const std::filesystem::path& path);

absl::StatusOr<GgufImport> ImportGguf(const std::filesystem::path& path);

}  // namespace warp::computed
