#pragma once

// GgufTokenizer: the tokenizer a GGUF file carries (tokenizer.ggml.*) as the
// Hugging Face tokenizer.json and tokenizer_config.json WARP's tokenizer reads,
// so that a GGUF user needs no other file. Byte-level BPE (`gpt2` model) with
// the pre-tokenizer of `tokenizer.ggml.pre` as the Hugging Face release has it
// (qwen2, llama-bpe, deepseek-v3, gpt-4o; others refused by name), and
// SentencePiece BPE (`llama` model: scores, no merges) as Llama 2's and
// Mixtral's tokenizer.json spell it, the merges ranked by the scores. Tokens of
// type CONTROL (and UNKNOWN) are special added tokens, USER_DEFINED plain ones.
//
// Thread-safe: a pure function of the file's metadata.

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "computed/convert/gguf.h"

namespace warp::computed {

struct GgufTokenizerFiles {
  std::string tokenizer_json;
  std::string tokenizer_config_json;  // bos/eos/unk_token, add_bos_token
};

// nullopt when the file has no tokenizer.ggml.model.
absl::StatusOr<std::optional<GgufTokenizerFiles>> GgufTokenizer(const GgufFile& file);

}  // namespace warp::computed
