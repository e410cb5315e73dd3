#include "computed/constrain/token_constraint.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace warp::computed::constrain {
namespace {

// Masks kept per reply; a JSON reply visits a few dozen distinct states.
constexpr size_t kCachedMasks = 64;
// States kept per reply (256 transitions each, 1 KiB): past it the table
// starts again from the current state.
constexpr size_t kKeptStates = 4096;

}  // namespace

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary,
                                 std::vector<int32_t> end_tokens)
    : vocabulary_(std::move(vocabulary)),
      end_tokens_(std::move(end_tokens)),
      table_(std::move(grammar)),
      current_(table_.Intern(GrammarState::Start(table_.grammar()))) {}

bool TokenConstraint::IsEnd(int32_t token) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end();
}

int32_t TokenConstraint::After(int32_t token) {
  if (current_ == StateTable::kDead || token < 0 || token >= vocabulary_->size()) {
    return StateTable::kDead;
  }
  const std::optional<std::string>& piece = vocabulary_->piece(token);
  if (!piece) return table_.AfterMarker(current_, token);
  if (piece->empty()) return StateTable::kDead;
  int32_t state = current_;
  for (const char byte : *piece) {
    state = table_.AfterByte(state, static_cast<uint8_t>(byte));
    if (state == StateTable::kDead) break;
  }
  return state;
}

bool TokenConstraint::Allows(int32_t token) {
  if (IsEnd(token)) return state().can_end();
  return After(token) != StateTable::kDead;
}

void TokenConstraint::Walk(int32_t node, int32_t state, std::vector<uint64_t>& bits) {
  const Vocabulary::Node& parent = vocabulary_->node(node);
  for (int32_t c = parent.first_child; c < parent.first_child + parent.child_count; ++c) {
    const Vocabulary::Node& child = vocabulary_->node(c);
    const int32_t next = table_.AfterByte(state, child.byte);
    if (next == StateTable::kDead) continue;
    for (int32_t k = child.first_token; k < child.first_token + child.token_count; ++k) {
      const int32_t token = vocabulary_->token(k);
      bits[token / 64] |= uint64_t{1} << (token % 64);
    }
    Walk(c, next, bits);
  }
}

const std::vector<uint64_t>& TokenConstraint::AllowedBits() {
  if (const auto found = masks_.find(current_); found != masks_.end()) return found->second;
  BoundTable();
  if (masks_.size() >= kCachedMasks) masks_.clear();
  ++masks_computed_;
  std::vector<uint64_t> bits((vocabulary_->size() + 63) / 64, 0);
  Walk(0, current_, bits);
  for (const int32_t token : vocabulary_->markers()) {
    if (state().AcceptsMarker(table_.grammar(), token)) {
      bits[token / 64] |= uint64_t{1} << (token % 64);
    }
  }
  return masks_.emplace(current_, std::move(bits)).first->second;
}

bool TokenConstraint::Mask(std::span<float> logits) {
  const std::vector<uint64_t>& bits = AllowedBits();
  constexpr float kRefused = -std::numeric_limits<float>::infinity();
  // End tokens go by the state alone, whatever their bytes: kept aside.
  const bool can_end = state().can_end();
  std::vector<std::pair<int32_t, float>> ends;
  for (const int32_t token : end_tokens_) {
    if (token >= 0 && static_cast<size_t>(token) < logits.size()) {
      ends.push_back({token, can_end ? logits[token] : kRefused});
    }
  }
  const size_t pieces = std::min(logits.size(), static_cast<size_t>(vocabulary_->size()));
  for (size_t word = 0; word * 64 < pieces; ++word) {
    const uint64_t allowed = bits[word];
    if (allowed == ~uint64_t{0}) continue;
    const size_t end = std::min(pieces, word * 64 + 64);
    for (size_t token = word * 64; token < end; ++token) {
      if ((allowed >> (token % 64) & 1) == 0) logits[token] = kRefused;
    }
  }
  std::fill(logits.begin() + pieces, logits.end(), kRefused);  // past the vocabulary
  for (const auto& [token, logit] : ends) logits[token] = logit;
  return std::any_of(logits.begin(), logits.end(), [](float l) { return l != kRefused; });
}

absl::Status TokenConstraint::Refusal() const {
  if (table_.saw_overflow()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("constrained decoding: the reply's grammar holds more than ", kMaxStacks,
                     " parses at once or nests deeper than ", kMaxStackDepth,
                     " (a schema of nested anyOf, or a reply nested that deep)"));
  }
  return absl::FailedPreconditionError(
      "constrained decoding: no token of the vocabulary continues the reply's grammar");
}

absl::Status TokenConstraint::Accept(int32_t token) {
  if (!Allows(token)) {
    return absl::FailedPreconditionError(
        absl::StrCat("token ", token, " does not continue the reply's grammar"));
  }
  if (IsEnd(token)) return absl::OkStatus();  // the reply ends
  current_ = After(token);
  BoundTable();
  return absl::OkStatus();
}

void TokenConstraint::BoundTable() {
  // The states of a long reply add up: past the bound the table starts again
  // from the current state (ids change; the masks go with them).
  if (table_.size() <= kKeptStates) return;
  GrammarState now = state();
  table_.Clear();
  masks_.clear();
  current_ = table_.Intern(std::move(now));
}

}  // namespace warp::computed::constrain
