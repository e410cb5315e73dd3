#include "computed/constrain/state_table.h"

namespace warp::computed::constrain {

int32_t StateTable::Intern(GrammarState state) {
  if (state.dead()) {
    saw_overflow_ |= state.overflowed();
    return kDead;
  }
  std::string key = state.Key();
  if (const auto found = ids_.find(key); found != ids_.end()) return found->second;
  const auto id = static_cast<int32_t>(states_.size());
  states_.push_back(std::move(state));
  after_byte_.emplace_back().fill(kUnknown);
  ids_.emplace(std::move(key), id);
  return id;
}

int32_t StateTable::AfterByte(int32_t id, uint8_t byte) {
  int32_t next = after_byte_[id][byte];
  if (next == kUnknown) {
    next = Intern(states_[id].AfterByte(*grammar_, byte));
    after_byte_[id][byte] = next;  // (after Intern: it may have grown the vector)
  }
  return next;
}

int32_t StateTable::AfterMarker(int32_t id, int32_t token) {
  return Intern(states_[id].AfterMarker(*grammar_, token));
}

void StateTable::Clear() {
  states_.clear();
  after_byte_.clear();
  ids_.clear();
}

}  // namespace warp::computed::constrain
