#include "computed/text/bpe_model.h"

#include <queue>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status.h"
#include "computed/text/utf8.h"

namespace warp::text {
absl::StatusOr<std::unique_ptr<BpeModel>> BpeModel::Create(const Json& model, BpeTables tables,
                                                           std::string_view path) {
  if (!tables.has_vocab) {
    return FieldError(FieldPath(path, "vocab"),
                      FindField(model, "vocab") ? "expected an object of token: id" : "missing");
  }
  if (!tables.has_merges) {
    return FieldError(FieldPath(path, "merges"),
                      FindField(model, "merges") ? "expected an array" : "missing");
  }
  std::unique_ptr<BpeModel> bpe(new BpeModel());
  WARP_RETURN_IF_ERROR(bpe->SetVocab(std::move(tables.vocab), FieldPath(path, "vocab")));
  // Options before merges: merged tokens depend on continuing_subword_prefix.
  WARP_RETURN_IF_ERROR(bpe->ParseOptions(model, path));
  WARP_RETURN_IF_ERROR(bpe->SetMerges(tables.merges, FieldPath(path, "merges")));
  return bpe;
}

absl::Status BpeModel::SetVocab(std::vector<std::pair<std::string, int64_t>> vocab,
                                std::string_view path) {
  int64_t max_id = -1;
  for (const auto& [token, id] : vocab) max_id = std::max(max_id, id);
  // Ids index a dense table; a stray huge id must not allocate gigabytes.
  if (max_id >= static_cast<int64_t>(2 * vocab.size() + kMaxIdSlack)) {
    return FieldError(path, absl::StrCat("id ", max_id, " is far beyond the ", vocab.size(),
                                         " tokens (ids must be nearly dense)"));
  }
  id_to_token_.resize(max_id + 1);
  has_token_.resize(max_id + 1, false);
  for (auto& [token, id] : vocab) {
    id_to_token_[id] = std::move(token);
    has_token_[id] = true;
  }
  token_to_id_.reserve(vocab.size());
  for (size_t id = 0; id < id_to_token_.size(); ++id) {
    if (has_token_[id]) token_to_id_[id_to_token_[id]] = static_cast<int32_t>(id);
  }
  for (int byte = 0; byte < 256; ++byte) {
    const auto it = token_to_id_.find(absl::StrFormat("<0x%02X>", byte));
    byte_ids_[byte] = it == token_to_id_.end() ? -1 : it->second;
  }
  return absl::OkStatus();
}

absl::Status BpeModel::SetMerges(const std::vector<std::pair<std::string, std::string>>& merges,
                                 std::string_view path) {
  merges_.reserve(merges.size());
  const size_t prefix_bytes = options_.continuing_subword_prefix.size();
  std::string merged;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto left_it = token_to_id_.find(left);
    const auto right_it = token_to_id_.find(right);
    // The merged token drops the right side's continuing_subword_prefix.
    merged.assign(left).append(right, std::min(prefix_bytes, right.size()));
    const auto merged_it = token_to_id_.find(merged);
    const std::string* missing = left_it == token_to_id_.end()     ? &left
                                 : right_it == token_to_id_.end()  ? &right
                                 : merged_it == token_to_id_.end() ? &merged
                                                                   : nullptr;
    if (missing != nullptr) {
      return FieldError(IndexPath(path, rank),
                        absl::StrCat("merge \"", left, " ", right, "\": token \"", *missing,
                                     "\" is not in the vocab"));
    }
    merges_.try_emplace(PairKey(left_it->second, right_it->second),
                        MergeResult{static_cast<int32_t>(rank), merged_it->second});
  }
  return absl::OkStatus();
}

absl::Status BpeModel::ParseOptions(const Json& model, std::string_view path) {
  if (FindField(model, "dropout") != nullptr) {
    return FieldError(FieldPath(path, "dropout"), "BPE dropout is not supported (must be null)");
  }
  absl::StatusOr<bool> byte_fallback = BoolFieldOr(model, "byte_fallback", path, false);
  absl::StatusOr<bool> fuse_unk = BoolFieldOr(model, "fuse_unk", path, false);
  absl::StatusOr<bool> ignore_merges = BoolFieldOr(model, "ignore_merges", path, false);
  absl::StatusOr<std::string> unk = StringFieldOr(model, "unk_token", path, "");
  absl::StatusOr<std::string> prefix = StringFieldOr(model, "continuing_subword_prefix", path, "");
  absl::StatusOr<std::string> suffix = StringFieldOr(model, "end_of_word_suffix", path, "");
  for (const absl::Status& status :
       {byte_fallback.status(), fuse_unk.status(), ignore_merges.status(), unk.status(),
        prefix.status(), suffix.status()}) {
    if (!status.ok()) return status;
  }
  options_.byte_fallback = *byte_fallback;
  options_.fuse_unk = *fuse_unk;
  options_.ignore_merges = *ignore_merges;
  options_.continuing_subword_prefix = *prefix;
  options_.end_of_word_suffix = *suffix;
  if (!unk->empty()) {
    const auto it = token_to_id_.find(*unk);
    if (it == token_to_id_.end()) {
      return FieldError(FieldPath(path, "unk_token"),
                        absl::StrCat("\"", *unk, "\" is not in the vocab"));
    }
    options_.unk_id = it->second;
  }
  return absl::OkStatus();
}

const BpeModel::MergeResult* BpeModel::FindMerge(int32_t left, int32_t right) const {
  const auto it = merges_.find(PairKey(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

// One symbol per character (tokenizers' BPE::merge_word): a vocab token, else
// its <0xXX> byte tokens (byte_fallback), else unk (fused when fuse_unk).
std::vector<BpeModel::Symbol> BpeModel::InitialSymbols(std::string_view piece) const {
  std::vector<Symbol> symbols;
  bool last_is_unk = false;
  auto add = [&](int32_t id) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
  };
  std::string lookup;
  ForEachCodePoint(piece, [&](char32_t, size_t offset, size_t length) {
    lookup.clear();
    if (offset > 0) lookup += options_.continuing_subword_prefix;
    lookup.append(piece.substr(offset, length));
    if (offset + length == piece.size()) lookup += options_.end_of_word_suffix;
    if (const auto it = token_to_id_.find(lookup); it != token_to_id_.end()) {
      add(it->second);
      last_is_unk = false;
      return;
    }
    if (options_.byte_fallback) {
      bool all_bytes = true;
      for (const char byte : lookup) all_bytes &= byte_ids_[static_cast<unsigned char>(byte)] >= 0;
      if (all_bytes) {
        for (const char byte : lookup) add(byte_ids_[static_cast<unsigned char>(byte)]);
        last_is_unk = false;
        return;
      }
    }
    if (!options_.unk_id) return;  // like tokenizers: no unk token, the character is dropped
    if (!(options_.fuse_unk && last_is_unk)) add(*options_.unk_id);
    last_is_unk = true;
  });
  return symbols;
}

void BpeModel::MergeAll(std::vector<Symbol>& symbols) const {
  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
  };
  auto worse = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(worse)> queue(worse);
  auto consider = [&](int32_t pos) {
    const Symbol& left = symbols[pos];
    if (left.next < 0) return;
    if (const MergeResult* merge = FindMerge(left.id, symbols[left.next].id)) {
      queue.push({merge->rank, pos, merge->id});
    }
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) consider(pos);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.id < 0 || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const MergeResult* merge = FindMerge(left.id, right.id);
    if (merge == nullptr || merge->id != top.new_id) continue;  // a stale candidate
    left.id = top.new_id;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    right.id = -1;
    if (left.prev >= 0) consider(left.prev);
    consider(top.pos);
  }
}

std::vector<int32_t> BpeModel::EncodeUncached(std::string_view piece) const {
  std::vector<Symbol> symbols = InitialSymbols(piece);
  MergeAll(symbols);
  std::vector<int32_t> ids;
  for (int32_t pos = symbols.empty() ? -1 : 0; pos >= 0; pos = symbols[pos].next) {
    ids.push_back(symbols[pos].id);
  }
  return ids;
}

void BpeModel::Encode(std::string_view piece, std::vector<int32_t>& ids) const {
  if (piece.empty()) return;
  if (options_.ignore_merges) {
    if (const auto it = token_to_id_.find(piece); it != token_to_id_.end()) {
      ids.push_back(it->second);
      return;
    }
  }
  const bool cacheable = piece.size() < kMaxCachedPieceBytes;
  if (cacheable) {
    absl::ReaderMutexLock lock(&mu_);
    if (const auto it = cache_.find(piece); it != cache_.end()) {
      ids.insert(ids.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int32_t> piece_ids = EncodeUncached(piece);
  ids.insert(ids.end(), piece_ids.begin(), piece_ids.end());
  if (cacheable) {
    absl::MutexLock lock(&mu_);
    if (cache_.size() >= kCacheCapacity) cache_.clear();  // bounded; refills with what is hot
    cache_.try_emplace(piece, std::move(piece_ids));
  }
}

std::optional<int32_t> BpeModel::TokenToId(std::string_view token) const {
  const auto it = token_to_id_.find(token);
  if (it == token_to_id_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::IdToToken(int32_t id) const {
  if (id < 0 || id >= vocab_size() || !has_token_[id]) return nullptr;
  return &id_to_token_[id];
}

}  // namespace warp::text
