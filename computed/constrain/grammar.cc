#include "computed/constrain/grammar.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace warp::computed::constrain {

int32_t GrammarBuilder::AddRule(std::string name) {
  names_.push_back(std::move(name));
  rules_.emplace_back();
  return static_cast<int32_t>(rules_.size() - 1);
}

void GrammarBuilder::AddAlternative(int32_t rule, Sequence sequence) {
  rules_[rule].push_back(std::move(sequence));
}

int32_t GrammarBuilder::AddRule(std::string name, std::vector<Sequence> alternatives) {
  const int32_t rule = AddRule(std::move(name));
  for (Sequence& sequence : alternatives) AddAlternative(rule, std::move(sequence));
  return rule;
}

Element GrammarBuilder::Bytes(const ByteSet& set) {
  const auto found = std::find(byte_sets_.begin(), byte_sets_.end(), set);
  if (found != byte_sets_.end()) {
    return {Element::Kind::kBytes, static_cast<int32_t>(found - byte_sets_.begin())};
  }
  byte_sets_.push_back(set);
  return {Element::Kind::kBytes, static_cast<int32_t>(byte_sets_.size() - 1)};
}

Element GrammarBuilder::Byte(uint8_t byte) {
  ByteSet set;
  set.set(byte);
  return Bytes(set);
}

void GrammarBuilder::AppendLiteral(std::string_view text, Sequence& sequence) {
  for (const char c : text) sequence.push_back(Byte(static_cast<uint8_t>(c)));
}

Sequence GrammarBuilder::Literal(std::string_view text) {
  Sequence sequence;
  AppendLiteral(text, sequence);
  return sequence;
}

absl::StatusOr<Grammar> GrammarBuilder::Build(int32_t root) && {
  const size_t count = rules_.size();
  for (size_t r = 0; r < count; ++r) {
    if (rules_[r].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("grammar rule \"", names_[r], "\" has no alternative"));
    }
  }
  // Nullable rules, then the rules each may start with without consuming:
  // a cycle there would make the matcher expand forever.
  std::vector<bool> nullable(count, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < count; ++r) {
      if (nullable[r]) continue;
      for (const Sequence& sequence : rules_[r]) {
        if (std::all_of(sequence.begin(), sequence.end(), [&](const Element& e) {
              return e.kind == Element::Kind::kRule && nullable[e.value];
            })) {
          nullable[r] = changed = true;
          break;
        }
      }
    }
  }
  std::vector<std::vector<int32_t>> leading(count);
  for (size_t r = 0; r < count; ++r) {
    for (const Sequence& sequence : rules_[r]) {
      for (const Element& e : sequence) {
        if (e.kind != Element::Kind::kRule) break;
        leading[r].push_back(e.value);
        if (!nullable[e.value]) break;
      }
    }
  }
  std::vector<int> color(count, 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<std::pair<int32_t, size_t>> path;
  for (size_t first = 0; first < count; ++first) {
    if (color[first] != 0) continue;
    path.push_back({static_cast<int32_t>(first), 0});
    color[first] = 1;
    while (!path.empty()) {
      auto& [rule, next] = path.back();
      if (next == leading[rule].size()) {
        color[rule] = 2;
        path.pop_back();
        continue;
      }
      const int32_t to = leading[rule][next++];
      if (color[to] == 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("grammar rule \"", names_[to], "\" is left-recursive"));
      }
      if (color[to] == 0) {
        color[to] = 1;
        path.push_back({to, 0});
      }
    }
  }

  Grammar grammar;
  grammar.byte_sets_ = std::move(byte_sets_);
  grammar.root_ = root;
  grammar.starts_.resize(count);
  for (size_t r = 0; r < count; ++r) {
    for (const Sequence& sequence : rules_[r]) {
      grammar.starts_[r].push_back(static_cast<int32_t>(grammar.elements_.size()));
      grammar.elements_.insert(grammar.elements_.end(), sequence.begin(), sequence.end());
      grammar.elements_.push_back({Element::Kind::kEnd, 0});
    }
  }
  return grammar;
}

bool GrammarState::Expand(const Grammar& grammar, Stack stack, std::vector<Stack>& out) {
  while (!stack.empty()) {
    if (stack.size() > kMaxStackDepth || out.size() >= kMaxStacks) return false;
    const int32_t position = stack.back();
    const Element& element = grammar.at(position);
    if (element.kind == Element::Kind::kEnd) {
      stack.pop_back();
      continue;
    }
    if (element.kind != Element::Kind::kRule) break;  // a terminal on top
    // Continue after the reference, popping first when nothing follows it.
    stack.back() = position + 1;
    if (grammar.at(position + 1).kind == Element::Kind::kEnd) stack.pop_back();
    const std::vector<int32_t>& starts = grammar.starts(element.value);
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      Stack alternative = stack;
      alternative.push_back(starts[k]);
      if (!Expand(grammar, std::move(alternative), out)) return false;
    }
    stack.push_back(starts.back());
  }
  if (out.size() >= kMaxStacks) return false;
  out.push_back(std::move(stack));
  return true;
}

void GrammarState::Overflow() {
  stacks_.clear();
  overflowed_ = true;
}

void GrammarState::Normalize() {
  std::sort(stacks_.begin(), stacks_.end());
  stacks_.erase(std::unique(stacks_.begin(), stacks_.end()), stacks_.end());
}

GrammarState GrammarState::Start(const Grammar& grammar) {
  GrammarState state;
  for (const int32_t start : grammar.starts(grammar.root())) {
    if (!Expand(grammar, Stack{start}, state.stacks_)) {
      state.Overflow();
      return state;
    }
  }
  state.Normalize();
  return state;
}

bool GrammarState::can_end() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

bool GrammarState::finished() const {
  return !stacks_.empty() &&
         std::all_of(stacks_.begin(), stacks_.end(), [](const Stack& s) { return s.empty(); });
}

template <typename Match>
GrammarState GrammarState::After(const Grammar& grammar, Match match) const {
  GrammarState next;
  for (const Stack& stack : stacks_) {
    if (stack.empty() || !match(grammar.at(stack.back()))) continue;
    Stack advanced = stack;
    ++advanced.back();
    if (!Expand(grammar, std::move(advanced), next.stacks_)) {
      next.Overflow();
      return next;
    }
  }
  if (next.stacks_.size() > 1) next.Normalize();
  return next;
}

bool GrammarState::Accepts(const Grammar& grammar, uint8_t byte) const {
  return std::any_of(stacks_.begin(), stacks_.end(), [&](const Stack& s) {
    if (s.empty()) return false;
    const Element& e = grammar.at(s.back());
    return e.kind == Element::Kind::kBytes && grammar.bytes(e.value).test(byte);
  });
}

bool GrammarState::AcceptsMarker(const Grammar& grammar, int32_t token) const {
  return std::any_of(stacks_.begin(), stacks_.end(), [&](const Stack& s) {
    if (s.empty()) return false;
    const Element& e = grammar.at(s.back());
    return e.kind == Element::Kind::kMarker && e.value == token;
  });
}

GrammarState GrammarState::AfterByte(const Grammar& grammar, uint8_t byte) const {
  return After(grammar, [&](const Element& e) {
    return e.kind == Element::Kind::kBytes && grammar.bytes(e.value).test(byte);
  });
}

GrammarState GrammarState::AfterMarker(const Grammar& grammar, int32_t token) const {
  return After(grammar, [&](const Element& e) {
    return e.kind == Element::Kind::kMarker && e.value == token;
  });
}

std::string GrammarState::Key() const {
  std::string key;
  for (const Stack& stack : stacks_) {
    key.append(reinterpret_cast<const char*>(stack.data()), stack.size() * sizeof(int32_t));
    key.append(4, '\xff');  // no position is -1
  }
  return key;
}

}  // namespace warp::computed::constrain
