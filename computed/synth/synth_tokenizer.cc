#include "computed/synth/synth_tokenizer.h"

#include <array>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/model/engram/compressed_token_map.h"
#include "computed/text/utf8.h"
#include "nlohmann/json.hpp"

namespace warp::computed {
namespace {

using json = nlohmann::ordered_json;

constexpr std::string_view kBos = "<\uff5cbegin\u2581of\u2581sentence\uff5c>";
constexpr std::string_view kEos = "<\uff5cend\u2581of\u2581sentence\uff5c>";
constexpr uint32_t kFixedTokens = 2 + 256;  // BOS, EOS, the bytes

// GPT-2's byte -> character table of byte-level BPE, each as UTF-8.
std::array<std::string, 256> ByteLevelChars() {
  std::array<std::string, 256> chars;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    text::AppendCodePoint(printable ? b : next++, chars[b]);
  }
  return chars;
}

// What the tokenizer's vocabulary is being filled with, and the keys its
// tokens normalize to (compressed_token_map.h's rule).
class VocabBuilder {
 public:
  VocabBuilder(uint32_t vocab_size, uint32_t compressed) : vocab_size_(vocab_size), compressed_(compressed) {}

  // Adds `token` (byte-level spelling) decoding to `bytes`, reached by merging
  // `left` and `right` ("" for the fixed tokens), if the counts still want a
  // token with its key. Fixed tokens are always added.
  void Offer(const std::string& token, std::string_view bytes, const std::string& left = "",
             const std::string& right = "") {
    if (ids_.contains(token) || Full()) return;
    const std::string text = text::Utf8Lossy(bytes);
    std::string key = text.find("\uFFFD") != std::string::npos ? token : NormalizeEngramText(text);
    if (key.empty()) key = text;
    const bool fixed = left.empty();
    const bool is_new = !keys_.contains(key);
    if (!fixed) {
      if (!ids_.contains(left) || !ids_.contains(right)) return;
      const uint32_t left_over = vocab_size_ - static_cast<uint32_t>(tokens_.size());
      const uint32_t new_wanted = compressed_ - static_cast<uint32_t>(keys_.size());
      if (is_new ? new_wanted == 0 : left_over == new_wanted) return;
      merges_.push_back(absl::StrCat(left, " ", right));
    }
    keys_.insert(std::move(key));
    ids_.emplace(token, static_cast<int32_t>(tokens_.size()));
    tokens_.push_back(token);
    decoded_.push_back(text);
  }

  bool Full() const { return tokens_.size() == vocab_size_; }
  size_t keys() const { return keys_.size(); }
  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::vector<std::string>& decoded() const { return decoded_; }
  const std::vector<std::string>& merges() const { return merges_; }

 private:
  uint32_t vocab_size_, compressed_;
  std::vector<std::string> tokens_, decoded_, merges_;
  absl::flat_hash_map<std::string, int32_t> ids_;
  absl::flat_hash_set<std::string> keys_;
};

}  // namespace

absl::StatusOr<std::string> SynthTokenizerJson(uint32_t vocab_size, uint32_t compressed_vocab_size) {
  const std::string sizes = absl::StrCat("vocab_size ", vocab_size,
                                         ", engram_compressed_vocab_size ", compressed_vocab_size);
  if (vocab_size < kFixedTokens || compressed_vocab_size > vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "synth tokenizer: ", sizes, ": needs at least ", kFixedTokens,
        " tokens (BOS, EOS, the 256 bytes) and no more compressed ids than tokens"));
  }
  const std::array<std::string, 256> chars = ByteLevelChars();
  VocabBuilder vocab(vocab_size, compressed_vocab_size);
  vocab.Offer(std::string(kBos), kBos);
  vocab.Offer(std::string(kEos), kEos);
  for (uint32_t b = 0; b < 256; ++b) vocab.Offer(chars[b], std::string(1, static_cast<char>(b)));
  if (vocab.keys() > compressed_vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("synth tokenizer: ", sizes, ": the ", kFixedTokens,
                                                   " fixed tokens already normalize to ",
                                                   vocab.keys(), " compressed ids"));
  }
  // " a", " A", " 0": a space and a letter or digit normalize onto the byte's own key.
  const std::string& space = chars[' '];
  for (const auto& [first, last] : {std::pair{'a', 'z'}, std::pair{'A', 'Z'}, std::pair{'0', '9'}}) {
    for (char c = first; c <= last; ++c) {
      vocab.Offer(space + c, std::string{' ', c}, space, std::string(1, c));
    }
  }
  // Letter pairs, each with three case variants that normalize onto it.
  std::vector<std::string> pairs;
  for (char x = 'a'; x <= 'z'; ++x) {
    for (char y = 'a'; y <= 'z'; ++y) {
      const std::string pair{x, y};
      pairs.push_back(pair);
      const char upper_x = static_cast<char>(x - 'a' + 'A'), upper_y = static_cast<char>(y - 'a' + 'A');
      for (const std::string& variant :
           {pair, std::string{upper_x, y}, std::string{upper_x, upper_y}, std::string{x, upper_y}}) {
        vocab.Offer(variant, variant, std::string(1, variant[0]), std::string(1, variant[1]));
      }
    }
  }
  // Quads of two pairs, with " abcd" and "Abcd".
  for (size_t i = 0; i < pairs.size() && !vocab.Full(); ++i) {
    const std::string capital =
        std::string(1, static_cast<char>(pairs[i][0] - 'a' + 'A')) + pairs[i][1];
    for (size_t j = 0; j < pairs.size() && !vocab.Full(); ++j) {
      const std::string quad = pairs[i] + pairs[j];
      vocab.Offer(quad, quad, pairs[i], pairs[j]);
      vocab.Offer(space + quad, " " + quad, space, quad);
      vocab.Offer(capital + pairs[j], capital + pairs[j], capital, pairs[j]);
    }
  }
  if (!vocab.Full() || vocab.keys() != compressed_vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat("synth tokenizer: ", sizes, ": reached ",
                                                   vocab.tokens().size(), " tokens and ",
                                                   vocab.keys(), " compressed ids"));
  }
  // The count as the engine will take it (the same rule, its own code).
  WARP_RETURN_IF_ERROR(BuildCompressedTokenMap(vocab.decoded(), vocab.tokens(),
                                               static_cast<int32_t>(compressed_vocab_size))
                           .status());

  json model_vocab = json::object();
  for (size_t id = 0; id < vocab.tokens().size(); ++id) model_vocab[vocab.tokens()[id]] = id;
  json added = json::array();
  for (const auto& [id, content] : {std::pair{0, kBos}, std::pair{1, kEos}}) {
    added.push_back({{"id", id}, {"content", std::string(content)}, {"single_word", false},
                     {"lstrip", false}, {"rstrip", false}, {"normalized", false},
                     {"special", true}});
  }
  const json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false},
                           {"trim_offsets", true}, {"use_regex", true}};
  const json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level},
      {"post_processor", nullptr},
      {"decoder", byte_level},
      {"model",
       {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr}, {"end_of_word_suffix", nullptr},
        {"fuse_unk", false}, {"byte_fallback", false}, {"ignore_merges", false},
        {"vocab", std::move(model_vocab)}, {"merges", vocab.merges()}}}};
  return tokenizer.dump(1) + "\n";
}

}  // namespace warp::computed
