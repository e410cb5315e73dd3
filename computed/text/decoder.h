#pragma once

// tokenizer.json decoders: ByteLevel, ByteFallback, Metaspace, Fuse, Strip,
// Replace and Sequence. Like Hugging Face's decode_chain, each turns a list
// of token strings into another list; the caller joins the result.
//
// Immutable after parsing; safe from any number of threads.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/json_fields.h"

namespace warp::text {

struct DecodePiece {
  std::string text;
  bool added = false;  // an added token: ByteLevel passes it through as written
};

struct DecodeContext {
  // The first piece starts the text. False when StreamingDecoder decodes a
  // continuation: then the start-of-text rules (Metaspace dropping the
  // leading space, Strip's `start`) do not apply to it.
  bool at_text_start = true;
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  // Fails only if a Replace regex match fails.
  virtual absl::StatusOr<std::vector<DecodePiece>> DecodeChain(
      std::vector<DecodePiece> pieces, const DecodeContext& context) const = 0;
};

// The byte a ByteFallback token "<0xXX>" stands for, or -1.
int ParseByteFallbackToken(std::string_view token);

// nullptr for JSON null. `path` names `config` in errors ("decoder").
absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const Json& config, std::string_view path);

}  // namespace warp::text
