#include "computed/text/tiktoken.h"

#include <queue>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/io/file.h"
#include "common/status.h"
#include "computed/text/json_fields.h"
#include "computed/text/tiktoken_patterns.h"
#include "computed/text/utf8.h"

namespace warp::text {
namespace {

constexpr size_t kMaxRankSlack = 1 << 16;  // holes allowed in the ranks

// Bytes valid UTF-8 never holds (overlong leads C0 and C1; leads past U+10FFFF
// from F5). Encode rejects invalid UTF-8 first, so merging never starts from
// them, and a vocabulary may leave them out (a small one uses those ids for
// its special tokens).
bool OccursInUtf8(int byte) { return byte != 0xC0 && byte != 0xC1 && byte < 0xF5; }

// A config's "bos_token": a string or an AddedToken object with "content".
std::string TokenContent(const Json& config, std::string_view key) {
  const Json* field = FindField(config, key);
  if (field == nullptr) return {};
  if (field->is_string()) return field->get<std::string>();
  const Json* content = FindField(*field, "content");
  return content != nullptr && content->is_string() ? content->get<std::string>() : "";
}

absl::StatusOr<AddedToken> ParseDecoderEntry(const std::string& key, const Json& entry,
                                             const std::string& path) {
  AddedToken token;
  int64_t id = 0;
  if (!absl::SimpleAtoi(key, &id) || id < 0 || id > INT32_MAX) {
    return FieldError(path, "expected a non-negative integer id as the key");
  }
  token.id = static_cast<int32_t>(id);
  if (!entry.is_object()) return FieldError(path, "expected an object");
  WARP_ASSIGN_OR_RETURN(token.content, StringField(entry, "content", path));
  if (token.content.empty()) return FieldError(FieldPath(path, "content"), "is empty");
  WARP_ASSIGN_OR_RETURN(token.special, BoolFieldOr(entry, "special", path, true));
  WARP_ASSIGN_OR_RETURN(token.single_word, BoolFieldOr(entry, "single_word", path, false));
  WARP_ASSIGN_OR_RETURN(token.lstrip, BoolFieldOr(entry, "lstrip", path, false));
  WARP_ASSIGN_OR_RETURN(token.rstrip, BoolFieldOr(entry, "rstrip", path, false));
  return token;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TiktokenTokenizer>> TiktokenTokenizer::Load(
    const std::filesystem::path& path, std::string_view text, const LoadOptions& options) {
  std::unique_ptr<TiktokenTokenizer> tokenizer(new TiktokenTokenizer());
  const std::string source = path.string();
  WARP_RETURN_IF_ERROR(tokenizer->ParseRanks(text, source));
  std::vector<AddedToken> specials;
  const std::filesystem::path config_path = path.parent_path() / "tokenizer_config.json";
  if (std::filesystem::exists(config_path)) {
    WARP_RETURN_IF_ERROR(tokenizer->ReadConfig(config_path, specials));
  }
  for (const auto& [content, id] : options.tiktoken_special_tokens) {
    specials.push_back({.content = content, .id = id, .special = true});
  }
  WARP_RETURN_IF_ERROR(tokenizer->SetSpecials(std::move(specials), source));
  const std::string pattern = ResolveTiktokenPattern(options.tiktoken_pattern);
  absl::StatusOr<std::unique_ptr<Regex>> regex = Regex::Compile(pattern, RegexDialect::kRust);
  if (!regex.ok()) return Annotate(regex.status(), absl::StrCat(source, ": tiktoken_pattern"));
  tokenizer->regex_ = *std::move(regex);
  return tokenizer;
}

absl::Status TiktokenTokenizer::ParseRanks(std::string_view text, const std::string& source) {
  size_t line_number = 0;
  std::string bytes;
  while (!text.empty()) {
    ++line_number;
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    while (!line.empty() && absl::ascii_isspace(line.back())) line.remove_suffix(1);
    while (!line.empty() && absl::ascii_isspace(line.front())) line.remove_prefix(1);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    if (line.empty()) continue;
    auto line_error = [&](std::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat(source, ":", line_number, ": ", std::string(what)));
    };
    const size_t space = line.find(' ');
    int64_t rank = 0;
    if (space == std::string_view::npos) return line_error("expected \"<base64 token> <rank>\"");
    if (!absl::Base64Unescape(absl::string_view(line.data(), space), &bytes) || bytes.empty()) {
      return line_error(
          absl::StrCat("invalid base64 token \"", std::string(line.substr(0, space)), "\""));
    }
    if (!absl::SimpleAtoi(absl::string_view(line.data() + space + 1, line.size() - space - 1),
                          &rank) ||
        rank < 0 || rank >= INT32_MAX) {
      return line_error(absl::StrCat("invalid rank \"", std::string(line.substr(space + 1)), "\""));
    }
    // Ranks index a dense table; a stray huge one must not allocate gigabytes.
    if (static_cast<size_t>(rank) >= 2 * line_number + kMaxRankSlack) {
      return line_error(absl::StrCat("rank ", rank, " is far beyond the number of lines"));
    }
    if (!ranks_.try_emplace(bytes, static_cast<int32_t>(rank)).second) {
      return line_error("the same token appears on an earlier line");
    }
    if (static_cast<size_t>(rank) >= id_to_bytes_.size()) id_to_bytes_.resize(rank + 1);
    id_to_bytes_[rank] = bytes;
  }
  if (ranks_.empty()) return absl::InvalidArgumentError(absl::StrCat(source, ": no tokens"));
  for (int byte = 0; byte < 256; ++byte) {  // merging starts from single bytes
    if (OccursInUtf8(byte) && !ranks_.contains(std::string(1, static_cast<char>(byte)))) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: no token for the byte 0x%02X (every byte UTF-8 text can hold needs one)", source,
          byte));
    }
  }
  vocab_size_ = static_cast<int32_t>(id_to_bytes_.size());
  return absl::OkStatus();
}

absl::Status TiktokenTokenizer::ReadConfig(const std::filesystem::path& config_path,
                                           std::vector<AddedToken>& specials) {
  const std::string source = config_path.string();
  WARP_ASSIGN_OR_RETURN(const std::string text, ReadFileToString(config_path));
  WARP_ASSIGN_OR_RETURN(const Json config, ParseJson(text, source));
  if (const Json* decoder = FindField(config, "added_tokens_decoder")) {
    if (!decoder->is_object()) {
      return Annotate(FieldError("added_tokens_decoder", "expected an object"), source);
    }
    for (const auto& [key, entry] : decoder->items()) {
      absl::StatusOr<AddedToken> token =
          ParseDecoderEntry(key, entry, FieldPath("added_tokens_decoder", key));
      if (!token.ok()) return Annotate(token.status(), source);
      specials.push_back(*std::move(token));
    }
  }
  absl::StatusOr<bool> add_bos = BoolFieldOr(config, "add_bos_token", "", false);
  absl::StatusOr<bool> add_eos = BoolFieldOr(config, "add_eos_token", "", false);
  if (!add_bos.ok()) return Annotate(add_bos.status(), source);
  if (!add_eos.ok()) return Annotate(add_eos.status(), source);
  if (*add_bos) bos_token_ = TokenContent(config, "bos_token");
  if (*add_eos) eos_token_ = TokenContent(config, "eos_token");
  return absl::OkStatus();
}

absl::Status TiktokenTokenizer::SetSpecials(std::vector<AddedToken> specials,
                                            const std::string& source) {
  std::vector<AddedTokenMatcher::Entry> entries;
  for (AddedToken& token : specials) {
    if (token.id < static_cast<int32_t>(id_to_bytes_.size()) && !id_to_bytes_[token.id].empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": special token \"", token.content,
                                                     "\" has id ", token.id,
                                                     ", which is a BPE token's rank"));
    }
    vocab_size_ = std::max(vocab_size_, token.id + 1);
    special_by_content_[token.content] = token.id;
    special_by_id_[token.id] = token;
    entries.push_back({token.content, std::move(token)});
  }
  for (const std::string* name : {&bos_token_, &eos_token_}) {
    if (!name->empty() && !special_by_content_.contains(*name)) {
      return absl::InvalidArgumentError(absl::StrCat(source, ": tokenizer_config.json names \"",
                                                     *name, "\", which is not a special token"));
    }
  }
  specials_ = std::make_unique<AddedTokenMatcher>(std::move(entries));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> TiktokenTokenizer::Encode(std::string_view text,
                                                               bool add_special_tokens) const {
  WARP_RETURN_IF_ERROR(CheckUtf8(text, "Encode"));
  std::vector<int32_t> ids;
  if (add_special_tokens && !bos_token_.empty()) ids.push_back(special_by_content_.at(bos_token_));
  for (const TextSegment& segment : specials_->Split(text)) {
    if (segment.token_id >= 0) {
      ids.push_back(segment.token_id);
      continue;
    }
    WARP_ASSIGN_OR_RETURN(const std::vector<Match> pieces, regex_->FindAll(segment.text));
    for (const Match& piece : pieces) {
      EncodePiece(segment.text.substr(piece.begin, piece.end - piece.begin), ids);
    }
  }
  if (add_special_tokens && !eos_token_.empty()) ids.push_back(special_by_content_.at(eos_token_));
  return ids;
}

// Parts are keyed by their start byte; next[k] is where the part at k ends.
void TiktokenTokenizer::EncodePiece(std::string_view piece, std::vector<int32_t>& ids) const {
  if (piece.empty()) return;
  if (const auto it = ranks_.find(piece); it != ranks_.end()) {
    ids.push_back(it->second);
    return;
  }
  const auto size = static_cast<int32_t>(piece.size());
  std::vector<int32_t> next(size), prev(size);
  std::vector<bool> alive(size, true);
  for (int32_t k = 0; k < size; ++k) {
    next[k] = k + 1;
    prev[k] = k - 1;
  }
  struct Candidate {
    int32_t rank;
    int32_t begin;  // of the left part
    int32_t end;    // of the right part: identifies the pair, parts only grow
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.begin > b.begin;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  auto consider = [&](int32_t begin) {
    if (begin < 0 || next[begin] >= size) return;
    const int32_t end = next[next[begin]];
    const auto it = ranks_.find(piece.substr(begin, end - begin));
    if (it != ranks_.end()) queue.push({it->second, begin, end});
  };
  for (int32_t k = 0; k < size; ++k) consider(k);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (!alive[top.begin] || next[top.begin] >= size || next[next[top.begin]] != top.end) continue;
    const int32_t right = next[top.begin];
    alive[right] = false;
    next[top.begin] = next[right];
    if (next[right] < size) prev[next[right]] = top.begin;
    consider(prev[top.begin]);
    consider(top.begin);
  }
  for (int32_t k = 0; k < size; k = next[k]) {
    ids.push_back(ranks_.find(piece.substr(k, next[k] - k))->second);
  }
}

absl::StatusOr<std::string> TiktokenTokenizer::Decode(absl::Span<const int32_t> ids,
                                                      bool skip_special_tokens) const {
  std::string bytes;
  for (const int32_t id : ids) {
    if (id < 0 || id >= vocab_size_) {
      return absl::InvalidArgumentError(
          absl::StrCat("Decode: token id ", id, " is out of range (vocab size ", vocab_size_, ")"));
    }
    if (const auto it = special_by_id_.find(id); it != special_by_id_.end()) {
      if (!(skip_special_tokens && it->second.special)) bytes += it->second.content;
    } else if (static_cast<size_t>(id) < id_to_bytes_.size()) {
      bytes += id_to_bytes_[id];  // a hole in the ranks adds nothing
    }
  }
  return Utf8Lossy(bytes);
}

std::optional<int32_t> TiktokenTokenizer::TokenToId(std::string_view token) const {
  if (const auto it = special_by_content_.find(token); it != special_by_content_.end()) {
    return it->second;
  }
  if (const auto it = ranks_.find(token); it != ranks_.end()) return it->second;
  return std::nullopt;
}

std::optional<std::string> TiktokenTokenizer::IdToToken(int32_t id) const {
  if (const auto it = special_by_id_.find(id); it != special_by_id_.end()) {
    return it->second.content;
  }
  if (id < 0 || static_cast<size_t>(id) >= id_to_bytes_.size() || id_to_bytes_[id].empty()) {
    return std::nullopt;  // out of range, or a hole in the ranks
  }
  return id_to_bytes_[id];  // raw bytes, as tiktoken's tokens are
}

bool TiktokenTokenizer::IsSpecial(int32_t id) const {
  const auto it = special_by_id_.find(id);
  return it != special_by_id_.end() && it->second.special;
}

std::optional<std::string> TiktokenTokenizer::PieceBytes(int32_t id) const {
  if (special_by_id_.contains(id) || id < 0 || static_cast<size_t>(id) >= id_to_bytes_.size() ||
      id_to_bytes_[id].empty()) {
    return std::nullopt;
  }
  return id_to_bytes_[id];
}

}  // namespace warp::text
