#pragma once

// tokenizer.json parsed for loading. Everything but the BPE vocab and merges
// becomes a JSON DOM; those two (gpt-oss: 200k tokens, 446k merges) stream
// straight into flat lists, because building them as JSON nodes took most of
// the load time (1.2 s for gpt-oss, against ~0.4 s now).

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/json_fields.h"

namespace warp::text {

struct BpeTables {
  bool has_vocab = false;  // model.vocab was an object and is in `vocab`
  bool has_merges = false;
  std::vector<std::pair<std::string, int64_t>> vocab;       // token, id; as written
  std::vector<std::pair<std::string, std::string>> merges;  // left, right; by rank
};

struct TokenizerJson {
  Json root;  // without model.vocab and model.merges when they were captured
  BpeTables bpe;
};

// A syntax error names `source` and the byte; a malformed vocab or merge
// entry names its JSON path ("model.merges[7]").
absl::StatusOr<TokenizerJson> ParseTokenizerJson(std::string_view text, std::string_view source);

}  // namespace warp::text
