#include "computed/model/engram/engram_addressing.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/engram/compressed_token_map.h"
#include "computed/text/tokenizer.h"

namespace warp::computed {

absl::StatusOr<EngramAddressing> LoadEngramAddressing(const ModelConfig& config,
                                                      const std::filesystem::path& tokenizer_path) {
  const EngramConfig& e = config.engram;
  WARP_ASSIGN_OR_RETURN(std::unique_ptr<text::Tokenizer> tokenizer,
                        text::Tokenizer::Load(tokenizer_path));
  WARP_ASSIGN_OR_RETURN(CompressedTokenMap map,
                        BuildCompressedTokenMap(*tokenizer, static_cast<int32_t>(e.compressed_vocab)));
  if (map.lookup.size() < config.vocab_size) {
    map.lookup.resize(config.vocab_size, map.lookup.empty() ? 0 : map.lookup.back());
  }
  if (e.pad_token >= map.lookup.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config.json: engram_pad_token_id: ", e.pad_token, " is not a token of ",
        tokenizer_path.string()));
  }
  EngramHashOptions options{.vocab_size = static_cast<int64_t>(e.bucket_base),
                            .max_ngram_size = static_cast<int32_t>(e.max_ngram),
                            .num_heads = static_cast<int32_t>(e.heads),
                            .compressed_vocab_size = map.compressed_vocab_size,
                            .pad_id = map.lookup[e.pad_token]};
  for (uint32_t layer : e.layers) options.layer_ids.push_back(static_cast<int32_t>(layer));
  WARP_ASSIGN_OR_RETURN(EngramHash hash, EngramHash::Create(options));
  for (size_t i = 0; i < e.layers.size(); ++i) {
    if (static_cast<int64_t>(e.table_rows[i]) != hash.num_rows(i)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.json: engram_num_embeddings[", i, "]: ", e.table_rows[i],
          " is not the sum of layer ", e.layers[i], "'s ", hash.num_columns(),
          " primes (", hash.num_rows(i), "): the table would not hold every hashed row"));
    }
  }
  return EngramAddressing{.hash = std::move(hash), .token_map = std::move(map.lookup)};
}

}  // namespace warp::computed
