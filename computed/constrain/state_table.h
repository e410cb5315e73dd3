#pragma once

// StateTable: the grammar states one reply has reached, interned, with their
// byte transitions filled in as they are first taken (a lazily built DFA, as
// RE2 builds one). A mask walks the vocabulary's trie through it, so a state
// reached again (the same place in a free string, an integer, a key) costs
// one table lookup per trie node instead of a pushdown step.
//
// Thread-compatible: one per reply.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "computed/constrain/grammar.h"

namespace warp::computed::constrain {

class StateTable {
 public:
  static constexpr int32_t kDead = -1;

  explicit StateTable(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {}

  // The id of `state` (kDead for a dead one).
  int32_t Intern(GrammarState state);
  int32_t AfterByte(int32_t id, uint8_t byte);
  int32_t AfterMarker(int32_t id, int32_t token);
  const GrammarState& state(int32_t id) const { return states_[id]; }
  const Grammar& grammar() const { return *grammar_; }
  size_t size() const { return states_.size(); }
  // Some state reached passed the grammar's bounds (GrammarState::overflowed).
  bool saw_overflow() const { return saw_overflow_; }
  // Forgets every state (ids are no longer valid): bounds the memory.
  void Clear();

 private:
  static constexpr int32_t kUnknown = -2;
  std::shared_ptr<const Grammar> grammar_;
  std::vector<GrammarState> states_;
  std::vector<std::array<int32_t, 256>> after_byte_;  // kUnknown until taken
  std::unordered_map<std::string, int32_t> ids_;      // by GrammarState::Key
  bool saw_overflow_ = false;
};

}  // namespace warp::computed::constrain
