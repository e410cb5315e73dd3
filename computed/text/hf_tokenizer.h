#pragma once

// A Hugging Face tokenizer.json with a BPE model: added tokens are cut out of
// the text first (raw-matched ones, then, per normalized stretch, normalized
// ones), each remaining stretch is normalized, pre-tokenized and encoded by
// the BPE model; add_special_tokens runs the post-processor. Decode maps ids
// to token strings and runs the decoder chain.
//
// Immutable after Create; safe from any number of threads.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "computed/text/added_tokens.h"
#include "computed/text/bpe_model.h"
#include "computed/text/decoder.h"
#include "computed/text/json_fields.h"
#include "computed/text/normalizer.h"
#include "computed/text/post_processor.h"
#include "computed/text/pre_tokenizer.h"
#include "computed/text/string_map.h"
#include "computed/text/tokenizer.h"
#include "computed/text/tokenizer_json.h"

namespace warp::text {

class HfTokenizer : public Tokenizer {
 public:
  // `source` (the file) prefixes every error: "tokenizer.json: model.merges[3]: ...".
  static absl::StatusOr<std::unique_ptr<HfTokenizer>> Create(TokenizerJson json,
                                                             std::string_view source);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool add_special_tokens) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special_tokens) const override;
  absl::StatusOr<std::string> DecodeContinuation(absl::Span<const int32_t> ids,
                                                 bool skip_special_tokens) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::optional<std::string> IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override;
  std::optional<std::string> PieceBytes(int32_t id) const override;

 private:
  HfTokenizer() = default;
  absl::Status ParseComponents(const Json& root, BpeTables bpe);
  absl::Status ParseAddedTokens(const Json& root);

  // Encodes one stretch of text between raw-matched added tokens.
  absl::Status EncodeSection(std::string_view section, bool at_text_start,
                             std::vector<int32_t>& ids) const;
  absl::StatusOr<std::string> DecodeWith(absl::Span<const int32_t> ids, bool skip_special_tokens,
                                         const DecodeContext& context) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<AddedTokenMatcher> raw_matcher_;         // tokens matched before normalizing
  std::unique_ptr<AddedTokenMatcher> normalized_matcher_;  // in normalized text
  absl::flat_hash_map<int32_t, AddedToken> added_by_id_;
  StringMap<int32_t> added_by_content_;
  int32_t vocab_size_ = 0;
};

}  // namespace warp::text
