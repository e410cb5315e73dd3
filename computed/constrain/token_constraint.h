#pragma once

// TokenConstraint: which tokens may come next in one reply that must match a
// grammar. A vocabulary token is allowed when its bytes lead to a live state,
// a marker when the grammar expects it, an end token (the reply's stop ids)
// when the text so far is a whole match. A mask walks the vocabulary's trie
// through the reply's StateTable (transitions computed once per state and
// byte), and is kept by state: inside a free string the state repeats.
//
// The engine asks Allows for the token it sampled unconstrained and masks
// only when it is refused: where the grammar allows the unconstrained
// sample, the reply's tokens (and its random draws) are the unconstrained
// ones. Resampling from the masked logits after a refusal draws from the
// masked distribution exactly (p(t) / p(allowed) for each allowed t).
//
// Thread-compatible: one per reply, used on the engine's thread.

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "computed/constrain/grammar.h"
#include "computed/constrain/state_table.h"
#include "computed/constrain/vocabulary.h"

namespace warp::computed::constrain {

class TokenConstraint {
 public:
  TokenConstraint(std::shared_ptr<const Grammar> grammar,
                  std::shared_ptr<const Vocabulary> vocabulary, std::vector<int32_t> end_tokens);

  bool Allows(int32_t token);
  // Sets every refused logit to -infinity; false when no token is allowed
  // (a literal the vocabulary cannot spell), which ends the reply.
  bool Mask(std::span<float> logits);
  // Why Mask allowed nothing: the grammar's bounds, or a literal no token spells.
  absl::Status Refusal() const;
  // Advances past `token`; FailedPrecondition naming it if not allowed,
  // ResourceExhausted when the grammar's state passed its bounds (grammar.h).
  absl::Status Accept(int32_t token);
  // The text is a whole match that nothing may extend: only an end token may come.
  bool finished() const { return table_.state(current_).finished(); }
  size_t masks_computed() const { return masks_computed_; }

 private:
  bool IsEnd(int32_t token) const;
  const GrammarState& state() const { return table_.state(current_); }
  // The state after `token`'s bytes or marker (StateTable::kDead if refused).
  int32_t After(int32_t token);
  // Bit t set: token t allowed in the current state.
  const std::vector<uint64_t>& AllowedBits();
  void Walk(int32_t node, int32_t state, std::vector<uint64_t>& bits);
  void BoundTable();

  std::shared_ptr<const Vocabulary> vocabulary_;
  std::vector<int32_t> end_tokens_;
  StateTable table_;
  int32_t current_;
  std::unordered_map<int32_t, std::vector<uint64_t>> masks_;  // by state id
  size_t masks_computed_ = 0;
};

}  // namespace warp::computed::constrain
