#pragma once

// A tiktoken BPE file (Kimi K2's tiktoken.model, OpenAI's *.tiktoken): one
// line per token, `base64(token bytes) rank`, the rank being the token id.
// Encoding cuts special tokens out of the text, splits the rest with the
// pre-tokenization regex (LoadOptions.tiktoken_pattern; Rust regex syntax),
// and merges each piece's bytes: the adjacent pair whose concatenation has the
// lowest rank merges first (the leftmost among equals), until no adjacent
// concatenation is a token. A piece that is itself a token is taken whole.
//
// Special tokens come from a tokenizer_config.json beside the file
// ("added_tokens_decoder": {"163584": {"content": "[BOS]", "special": true}})
// and from LoadOptions.tiktoken_special_tokens. add_special_tokens adds
// bos_token / eos_token when that config sets add_bos_token / add_eos_token.
//
// Immutable after Load; safe from any number of threads.

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "computed/text/added_tokens.h"
#include "computed/text/regex.h"
#include "computed/text/string_map.h"
#include "computed/text/tokenizer.h"

namespace warp::text {

class TiktokenTokenizer : public Tokenizer {
 public:
  // `text` is the content of the file at `path`. A bad line is
  // InvalidArgument "PATH:LINE: ...".
  static absl::StatusOr<std::unique_ptr<TiktokenTokenizer>> Load(const std::filesystem::path& path,
                                                                 std::string_view text,
                                                                 const LoadOptions& options);

  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text,
                                              bool add_special_tokens) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special_tokens) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> TokenToId(std::string_view token) const override;
  std::optional<std::string> IdToToken(int32_t id) const override;
  bool IsSpecial(int32_t id) const override;
  std::optional<std::string> PieceBytes(int32_t id) const override;

 private:
  TiktokenTokenizer() = default;
  absl::Status ParseRanks(std::string_view text, const std::string& source);
  absl::Status ReadConfig(const std::filesystem::path& config_path,
                          std::vector<AddedToken>& specials);
  absl::Status SetSpecials(std::vector<AddedToken> specials, const std::string& source);
  void EncodePiece(std::string_view piece, std::vector<int32_t>& ids) const;

  StringMap<int32_t> ranks_;              // token bytes -> rank (= id)
  std::vector<std::string> id_to_bytes_;  // by rank; holes are empty
  std::unique_ptr<Regex> regex_;
  std::unique_ptr<AddedTokenMatcher> specials_;
  absl::flat_hash_map<int32_t, AddedToken> special_by_id_;
  StringMap<int32_t> special_by_content_;
  std::string bos_token_;  // added by add_special_tokens when set
  std::string eos_token_;
  int32_t vocab_size_ = 0;
};

}  // namespace warp::text
