#pragma once

// tokenizer.json pre-tokenizers: Split, ByteLevel, Digits, Metaspace,
// Whitespace, WhitespaceSplit, Punctuation and Sequence, with Hugging Face's
// (Rust) semantics. They cut a normalized stretch of text into the pieces the
// BPE model encodes one by one.
//
// Where the JS port (@huggingface/tokenizers, the test reference) departs
// from the Rust crate, this follows Rust: Split honours all five behaviors
// and `invert` keeps the gaps; Metaspace honours `split`; Digits takes every
// Unicode number, Whitespace Unicode word characters; Punctuation isolates
// each punctuation character.
//
// Immutable after parsing; PreTokenize is safe from any number of threads.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/json_fields.h"

namespace warp::text {

struct PreTokenizeContext {
  // The first piece starts the input text (no added token before it); the
  // Metaspace prepend_scheme "first" only prepends there.
  bool at_text_start = false;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and may rewrite) each of `pieces`, keeping their order; drops
  // empty pieces. Fails only if a regex match fails.
  virtual absl::StatusOr<std::vector<std::string>> PreTokenize(
      std::vector<std::string> pieces, const PreTokenizeContext& context) const = 0;
};

// nullptr for JSON null. `path` names `config` in errors ("pre_tokenizer").
absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& config,
                                                                std::string_view path);

}  // namespace warp::text
