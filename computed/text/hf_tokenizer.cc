#include "computed/text/hf_tokenizer.h"

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/text/byte_level.h"
#include "computed/text/decoder.h"
#include "computed/text/utf8.h"

namespace warp::text {
namespace {

absl::StatusOr<AddedToken> ParseAddedToken(const Json& entry, std::string_view path) {
  if (!entry.is_object()) return FieldError(path, "expected an object");
  AddedToken token;
  const Json* id = FindField(entry, "id");
  if (id == nullptr || !id->is_number_integer() || id->get<int64_t>() < 0 ||
      id->get<int64_t>() > INT32_MAX) {
    return FieldError(FieldPath(path, "id"), "expected a non-negative integer");
  }
  token.id = id->get<int32_t>();
  WARP_ASSIGN_OR_RETURN(token.content, StringField(entry, "content", path));
  if (token.content.empty()) return FieldError(FieldPath(path, "content"), "is empty");
  WARP_ASSIGN_OR_RETURN(token.special, BoolFieldOr(entry, "special", path, false));
  WARP_ASSIGN_OR_RETURN(token.single_word, BoolFieldOr(entry, "single_word", path, false));
  WARP_ASSIGN_OR_RETURN(token.lstrip, BoolFieldOr(entry, "lstrip", path, false));
  WARP_ASSIGN_OR_RETURN(token.rstrip, BoolFieldOr(entry, "rstrip", path, false));
  WARP_ASSIGN_OR_RETURN(token.normalized, BoolFieldOr(entry, "normalized", path, !token.special));
  return token;
}

absl::StatusOr<std::unique_ptr<BpeModel>> ParseModel(const Json& root, BpeTables bpe) {
  const Json* model = FindField(root, "model");
  if (model == nullptr) return FieldError("model", "missing");
  if (!model->is_object()) return FieldError("model", "expected an object");
  const std::string type = FindField(*model, "type") != nullptr && (*model)["type"].is_string()
                               ? (*model)["type"].get<std::string>()
                               : "BPE";  // older files leave it out
  if (type != "BPE") {
    return FieldError("model.type", absl::StrCat("unsupported model type \"", type,
                                                 "\" (only BPE is supported)"));
  }
  return BpeModel::Create(*model, std::move(bpe), "model");
}

}  // namespace

absl::StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Create(TokenizerJson json,
                                                                 std::string_view source) {
  std::unique_ptr<HfTokenizer> tokenizer(new HfTokenizer());
  absl::Status status = json.root.is_object()
                            ? tokenizer->ParseComponents(json.root, std::move(json.bpe))
                            : absl::InvalidArgumentError("expected a JSON object");
  if (!status.ok()) return Annotate(status, source);
  return tokenizer;
}

absl::Status HfTokenizer::ParseComponents(const Json& root, BpeTables bpe) {
  WARP_ASSIGN_OR_RETURN(model_, ParseModel(root, std::move(bpe)));
  static const Json kNull;
  auto component = [&](std::string_view key) -> const Json& {
    const Json* field = FindField(root, key);
    return field == nullptr ? kNull : *field;
  };
  WARP_ASSIGN_OR_RETURN(normalizer_, ParseNormalizer(component("normalizer"), "normalizer"));
  WARP_ASSIGN_OR_RETURN(pre_tokenizer_,
                        ParsePreTokenizer(component("pre_tokenizer"), "pre_tokenizer"));
  WARP_ASSIGN_OR_RETURN(post_processor_,
                        ParsePostProcessor(component("post_processor"), "post_processor"));
  WARP_ASSIGN_OR_RETURN(decoder_, ParseDecoder(component("decoder"), "decoder"));
  return ParseAddedTokens(root);
}

absl::Status HfTokenizer::ParseAddedTokens(const Json& root) {
  std::vector<AddedTokenMatcher::Entry> raw, normalized;
  const Json* list = FindField(root, "added_tokens");
  if (list != nullptr && !list->is_array()) return FieldError("added_tokens", "expected an array");
  vocab_size_ = model_->vocab_size();
  for (size_t k = 0; list != nullptr && k < list->size(); ++k) {
    WARP_ASSIGN_OR_RETURN(AddedToken token,
                          ParseAddedToken((*list)[k], IndexPath("added_tokens", k)));
    added_by_id_[token.id] = token;
    added_by_content_[token.content] = token.id;
    vocab_size_ = std::max(vocab_size_, token.id + 1);
    if (token.normalized && normalizer_ != nullptr) {
      // Matched in normalized text, so by its normalized form (as HF).
      WARP_ASSIGN_OR_RETURN(std::string pattern, normalizer_->Normalize(token.content));
      normalized.push_back({std::move(pattern), std::move(token)});
    } else {
      raw.push_back({token.content, std::move(token)});
    }
  }
  raw_matcher_ = std::make_unique<AddedTokenMatcher>(std::move(raw));
  normalized_matcher_ = std::make_unique<AddedTokenMatcher>(std::move(normalized));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> HfTokenizer::Encode(std::string_view text,
                                                         bool add_special_tokens) const {
  WARP_RETURN_IF_ERROR(CheckUtf8(text, "Encode"));
  std::vector<int32_t> ids;
  for (const TextSegment& segment : raw_matcher_->Split(text)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
    } else {
      WARP_RETURN_IF_ERROR(EncodeSection(segment.text, segment.offset == 0, ids));
    }
  }
  if (add_special_tokens && post_processor_ != nullptr) {
    ids = post_processor_->Process(std::move(ids));
  }
  return ids;
}

absl::Status HfTokenizer::EncodeSection(std::string_view section, bool at_text_start,
                                        std::vector<int32_t>& ids) const {
  std::string normalized(section);
  if (normalizer_ != nullptr) {
    WARP_ASSIGN_OR_RETURN(normalized, normalizer_->Normalize(section));
  }
  for (const TextSegment& segment : normalized_matcher_->Split(normalized)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      continue;
    }
    std::vector<std::string> pieces{std::string(segment.text)};
    if (pre_tokenizer_ != nullptr) {
      const PreTokenizeContext context{.at_text_start = at_text_start && segment.offset == 0};
      WARP_ASSIGN_OR_RETURN(pieces, pre_tokenizer_->PreTokenize(std::move(pieces), context));
    }
    for (const std::string& piece : pieces) model_->Encode(piece, ids);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> HfTokenizer::Decode(absl::Span<const int32_t> ids,
                                                bool skip_special_tokens) const {
  return DecodeWith(ids, skip_special_tokens, DecodeContext{.at_text_start = true});
}

absl::StatusOr<std::string> HfTokenizer::DecodeContinuation(absl::Span<const int32_t> ids,
                                                            bool skip_special_tokens) const {
  return DecodeWith(ids, skip_special_tokens, DecodeContext{.at_text_start = false});
}

absl::StatusOr<std::string> HfTokenizer::DecodeWith(absl::Span<const int32_t> ids,
                                                    bool skip_special_tokens,
                                                    const DecodeContext& context) const {
  std::vector<DecodePiece> pieces;
  pieces.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("Decode: token id ", id, " is out of range (vocab size ", vocab_size_, ")"));
    }
    if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) {
      if (!(skip_special_tokens && it->second.special)) {
        pieces.push_back({it->second.content, /*added=*/true});
      }
    } else if (const std::string* token = model_->IdToToken(id)) {
      pieces.push_back({*token, /*added=*/false});
    }
  }
  std::string text;
  if (decoder_ == nullptr) {  // tokenizers joins with spaces when there is no decoder
    for (size_t k = 0; k < pieces.size(); ++k) absl::StrAppend(&text, k ? " " : "", pieces[k].text);
    return text;
  }
  WARP_ASSIGN_OR_RETURN(pieces, decoder_->DecodeChain(std::move(pieces), context));
  for (const DecodePiece& piece : pieces) text += piece.text;
  return text;
}

std::optional<int32_t> HfTokenizer::TokenToId(std::string_view token) const {
  if (const auto it = added_by_content_.find(token); it != added_by_content_.end()) {
    return it->second;
  }
  return model_->TokenToId(token);
}

std::optional<std::string> HfTokenizer::IdToToken(int32_t id) const {
  if (const auto it = added_by_id_.find(id); it != added_by_id_.end()) return it->second.content;
  if (const std::string* token = model_->IdToToken(id)) return *token;
  return std::nullopt;
}

bool HfTokenizer::IsSpecial(int32_t id) const {
  const auto it = added_by_id_.find(id);
  return it != added_by_id_.end() && it->second.special;
}

std::optional<std::string> HfTokenizer::PieceBytes(int32_t id) const {
  if (added_by_id_.contains(id)) return std::nullopt;
  const std::string* token = model_->IdToToken(id);
  if (token == nullptr) return std::nullopt;
  absl::StatusOr<std::string> text =
      DecodeWith({id}, /*skip_special_tokens=*/false, DecodeContext{.at_text_start = false});
  if (text.ok() && text->find(kReplacementChar) == std::string::npos) return *std::move(text);
  // Half a character: the raw bytes, as a byte-level (Ġ...) or <0xXX> token spells them.
  if (const int byte = ParseByteFallbackToken(*token); byte >= 0) return std::string(1, char(byte));
  std::string bytes;
  bool mapped = true;
  ForEachCodePoint(*token, [&](char32_t code_point, size_t, size_t) {
    const int byte = CharToByte(code_point);
    mapped &= byte >= 0;
    if (mapped) bytes.push_back(static_cast<char>(byte));
  });
  if (mapped) return bytes;
  return text.ok() ? std::optional<std::string>(*std::move(text)) : std::nullopt;
}

}  // namespace warp::text
