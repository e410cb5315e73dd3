#pragma once

// Tokenizers as model releases ship them, with ids identical to the reference
// implementations:
//   - Hugging Face tokenizer.json with a BPE model: byte-level BPE (DeepSeek V3,
//     Kimi K2's HF files, Qwen3, GLM-4.5, gpt-oss, Llama 3) and SentencePiece-
//     style BPE with byte fallback (Llama 2, Mixtral);
//   - tiktoken BPE files (`base64(token) rank` lines; Kimi K2's tiktoken.model),
//     with a pre-tokenization regex and special tokens from LoadOptions and a
//     tokenizer_config.json beside the file.
// What each component supports: normalizer.h, pre_tokenizer.h, bpe_model.h,
// decoder.h, post_processor.h, tiktoken.h. Streaming decode: StreamingDecoder.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"

namespace warp::text {

struct LoadOptions {
  // The pre-tokenization regex of a tiktoken file (Kimi ships it in Python
  // code, not in the file): a regex (Rust regex syntax; class intersection
  // `&&` is supported), or "kimi" / "cl100k_base" / "o200k_base"; empty = kimi.
  std::string tiktoken_pattern;
  // Special tokens of a tiktoken file, content -> id, added to (and winning
  // over) the added_tokens_decoder of a tokenizer_config.json beside it.
  std::map<std::string, int32_t> tiktoken_special_tokens;
};

// Immutable after Load; Encode/Decode are safe to call from any number of threads.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // A tokenizer.json or a tiktoken BPE file (format detected from the content:
  // a JSON object, or lines of `base64 rank`). Errors name the file and the
  // JSON path or line that is wrong.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Load(const std::filesystem::path& path,
                                                         const LoadOptions& options = {});

  // Special tokens written in the text (e.g. "<|im_start|>") are always
  // recognized, as HF does. add_special_tokens applies the post-processor
  // (e.g. prepends BOS). Invalid UTF-8 is InvalidArgument naming the byte offset.
  virtual absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                                      bool add_special_tokens = false) const = 0;

  // Fails (InvalidArgument naming the id and the vocab size) on an
  // out-of-range id. An in-range id with no token (a hole in the id space)
  // decodes to nothing, as HF does. HF's clean_up_tokenization_spaces is never
  // applied (it breaks round trips), so Decode(Encode(s)) == s for byte-level
  // and tiktoken files (s normalized, if the file normalizes). SentencePiece
  // style files drop the space they prepend only at the start of the text:
  // text right after an added token decodes with a leading space, as HF's.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                             bool skip_special_tokens = false) const = 0;

  // Decodes `ids` that continue earlier ones: start-of-text rules (dropping
  // the space a SentencePiece tokenizer prepended) do not apply. For
  // StreamingDecoder; the default is Decode.
  virtual absl::StatusOr<std::string> DecodeContinuation(absl::Span<const int32_t> ids,
                                                         bool skip_special_tokens) const {
    return Decode(ids, skip_special_tokens);
  }

  virtual int32_t vocab_size() const = 0;  // largest id + 1, added tokens included
  // Vocab or added token, exact string (byte-level vocabs spell ' ' as "Ġ";
  // tiktoken tokens are raw bytes).
  virtual std::optional<int32_t> TokenToId(std::string_view token) const = 0;
  // The inverse, as HF's id_to_token: the added token's content or the vocab
  // token of `id`; nullopt for an id with no token or out of range.
  virtual std::optional<std::string> IdToToken(int32_t id) const = 0;
  virtual bool IsSpecial(int32_t id) const = 0;
  // The bytes a vocabulary token adds to a text it continues, before any
  // UTF-8 repair (a byte-level token may hold half a character); nullopt for
  // added tokens (markers), holes and out-of-range ids. For constrained
  // decoding, which matches tokens against a grammar byte by byte.
  virtual std::optional<std::string> PieceBytes(int32_t id) const = 0;
};

// Turns ids into text one id at a time, as they are generated. Push returns
// only complete text: never half a character, even when a character spans
// several byte-level or <0xXX> tokens (a decode ending in U+FFFD is held back
// until the next id completes it). Flush returns the rest (invalid leftovers
// as U+FFFD, as HF decodes them). The pieces concatenate to Decode(all ids).
// Decodes a sliding window of ids (the last emitted step plus the pending
// ones), so the cost per id does not grow with the length of the text. This
// assumes decoding a prefix of ids gives a prefix of the text, true of every
// decoder here except Strip with stop > 0 (no known release uses it).
//
// Thread-compatible: one per generation stream.
class StreamingDecoder {
 public:
  explicit StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);

  absl::StatusOr<std::string> Push(int32_t id);  // text now complete, possibly empty
  std::string Flush();                           // the rest; the decoder then starts a new text

 private:
  absl::StatusOr<std::string> DecodeWindow(size_t end) const;  // window_[0, end)

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> window_;  // the last emitted step, then the pending ids
  size_t read_offset_ = 0;       // window_[0, read_offset_) was emitted
  bool window_at_start_ = true;  // window_ starts the text
};

}  // namespace warp::text
