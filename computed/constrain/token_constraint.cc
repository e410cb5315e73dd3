#include "computed/constrain/token_constraint.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace warp::computed::constrain {
namespace {

// Masks kept per reply; a JSON reply visits a few dozen distinct states.
constexpr size_t kCachedMasks = 64;

}  // namespace

TokenConstraint::TokenConstraint(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const Vocabulary> vocabulary,
                                 std::vector<int32_t> end_tokens)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      end_tokens_(std::move(end_tokens)),
      state_(GrammarState::Start(*grammar_)) {}

bool TokenConstraint::IsEnd(int32_t token) const {
  return std::find(end_tokens_.begin(), end_tokens_.end(), token) != end_tokens_.end();
}

bool TokenConstraint::Allows(int32_t token) const {
  if (IsEnd(token)) return state_.can_end();
  if (token < 0 || token >= vocabulary_->size()) return false;
  const std::optional<std::string>& piece = vocabulary_->piece(token);
  if (!piece) return state_.AcceptsMarker(*grammar_, token);
  if (piece->empty()) return false;
  GrammarState state = state_;
  for (const char byte : *piece) {
    if (!state.Accepts(*grammar_, static_cast<uint8_t>(byte))) return false;
    state = state.AfterByte(*grammar_, static_cast<uint8_t>(byte));
  }
  return !state.dead();
}

void TokenConstraint::Walk(int32_t node, const GrammarState& state,
                           std::vector<uint64_t>& bits) const {
  const Vocabulary::Node& parent = vocabulary_->node(node);
  for (int32_t c = parent.first_child; c < parent.first_child + parent.child_count; ++c) {
    const Vocabulary::Node& child = vocabulary_->node(c);
    if (!state.Accepts(*grammar_, child.byte)) continue;
    const GrammarState next = state.AfterByte(*grammar_, child.byte);
    if (next.dead()) continue;
    for (int32_t k = child.first_token; k < child.first_token + child.token_count; ++k) {
      const int32_t token = vocabulary_->token(k);
      bits[token / 64] |= uint64_t{1} << (token % 64);
    }
    Walk(c, next, bits);
  }
}

const std::vector<uint64_t>& TokenConstraint::AllowedBits() {
  std::string key = state_.Key();
  if (const auto found = masks_.find(key); found != masks_.end()) return found->second;
  if (masks_.size() >= kCachedMasks) masks_.clear();
  ++masks_computed_;
  std::vector<uint64_t> bits((vocabulary_->size() + 63) / 64, 0);
  Walk(0, state_, bits);
  for (int32_t token = 0; token < vocabulary_->size(); ++token) {
    if (!vocabulary_->piece(token) && state_.AcceptsMarker(*grammar_, token)) {
      bits[token / 64] |= uint64_t{1} << (token % 64);
    }
  }
  return masks_.emplace(std::move(key), std::move(bits)).first->second;
}

bool TokenConstraint::Mask(std::span<float> logits) {
  const std::vector<uint64_t>& bits = AllowedBits();
  const bool can_end = state_.can_end();
  bool any = false;
  for (size_t token = 0; token < logits.size(); ++token) {
    const bool end = IsEnd(static_cast<int32_t>(token));
    const bool allowed = end ? can_end
                             : token < static_cast<size_t>(vocabulary_->size()) &&
                                   (bits[token / 64] >> (token % 64) & 1) != 0;
    if (allowed) {
      any = true;
    } else {
      logits[token] = -std::numeric_limits<float>::infinity();
    }
  }
  return any;
}

absl::Status TokenConstraint::Accept(int32_t token) {
  if (!Allows(token)) {
    return absl::FailedPreconditionError(
        absl::StrCat("token ", token, " does not continue the reply's grammar"));
  }
  if (IsEnd(token)) return absl::OkStatus();  // the reply ends
  const std::optional<std::string>& piece = vocabulary_->piece(token);
  if (!piece) {
    state_ = state_.AfterMarker(*grammar_, token);
  } else {
    for (const char byte : *piece) state_ = state_.AfterByte(*grammar_, static_cast<uint8_t>(byte));
  }
  return absl::OkStatus();
}

}  // namespace warp::computed::constrain
