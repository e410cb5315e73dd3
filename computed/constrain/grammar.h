#pragma once

// Grammar: context-free rules over bytes and marker tokens (a family's
// special tokens such as <tool_call>), and the state of a text matched
// against them. Built by code (GrammarBuilder: the JSON schema compiler, the
// tool-call syntaxes), not parsed from a grammar text.
//
// The state is a set of pushdown stacks, as llama.cpp's GBNF matcher keeps:
// each stack is the positions still to match, innermost last, its top a
// terminal (a byte set or a marker) or empty (the text may end here). A rule
// ending in a reference to another pops before it pushes, so repetition by
// right recursion does not grow the stack.
//
// Grammar is immutable, safe from any number of threads; GrammarState is a
// value.

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace warp::computed::constrain {

using ByteSet = std::bitset<256>;

struct Element {
  enum class Kind : uint8_t { kEnd, kBytes, kMarker, kRule };
  Kind kind = Kind::kEnd;
  int32_t value = 0;  // kBytes: a byte set's index; kMarker: a token id; kRule: a rule's index
};
using Sequence = std::vector<Element>;

class Grammar {
 public:
  // Where each alternative of `rule` starts in elements().
  const std::vector<int32_t>& starts(int32_t rule) const { return starts_[rule]; }
  const Element& at(int32_t position) const { return elements_[position]; }
  const ByteSet& bytes(int32_t index) const { return byte_sets_[index]; }
  int32_t root() const { return root_; }

 private:
  friend class GrammarBuilder;
  std::vector<Element> elements_;  // every alternative's elements, each followed by kEnd
  std::vector<std::vector<int32_t>> starts_;
  std::vector<ByteSet> byte_sets_;
  int32_t root_ = 0;
};

// Thread-compatible.
class GrammarBuilder {
 public:
  // A rule with no alternatives yet; `name` appears in errors.
  int32_t AddRule(std::string name);
  void AddAlternative(int32_t rule, Sequence sequence);
  // A rule of one alternative per sequence.
  int32_t AddRule(std::string name, std::vector<Sequence> alternatives);

  Element Bytes(const ByteSet& set);
  Element Byte(uint8_t byte);
  static Element Marker(int32_t token) { return {Element::Kind::kMarker, token}; }
  static Element Ref(int32_t rule) { return {Element::Kind::kRule, rule}; }
  // Appends the bytes of `text` to `sequence`.
  void AppendLiteral(std::string_view text, Sequence& sequence);
  Sequence Literal(std::string_view text);

  // Refuses (InvalidArgument, naming the rule) a rule with no alternative
  // and left recursion, which the matcher could not expand.
  absl::StatusOr<Grammar> Build(int32_t root) &&;

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<Sequence>> rules_;
  std::vector<ByteSet> byte_sets_;
};

// Bounds on one state: a schema whose alternatives stay open together (nested
// anyOf of the same shape) doubles the stacks at each level, and a deep
// nesting makes each stack long; past either the state is `overflowed` (and
// dead), so that one request cannot take the engine's memory.
inline constexpr size_t kMaxStacks = 1024;
inline constexpr size_t kMaxStackDepth = 1024;

class GrammarState {
 public:
  // The state before any text.
  static GrammarState Start(const Grammar& grammar);

  bool dead() const { return stacks_.empty(); }  // no text continues to a match
  bool overflowed() const { return overflowed_; }  // dead because a bound was passed
  bool can_end() const;                          // the text so far is a match
  bool finished() const;                         // a match that nothing may extend
  // Whether a byte or marker could come next.
  bool Accepts(const Grammar& grammar, uint8_t byte) const;
  bool AcceptsMarker(const Grammar& grammar, int32_t token) const;
  // The state after it (dead if it could not come next).
  GrammarState AfterByte(const Grammar& grammar, uint8_t byte) const;
  GrammarState AfterMarker(const Grammar& grammar, int32_t token) const;
  // Equal for equal states: the key of a mask cache.
  std::string Key() const;

 private:
  using Stack = std::vector<int32_t>;  // positions in Grammar::elements, innermost last
  template <typename Match>
  GrammarState After(const Grammar& grammar, Match match) const;
  // False when a bound was passed (`out` is then incomplete).
  static bool Expand(const Grammar& grammar, Stack stack, std::vector<Stack>& out);
  void Normalize();
  void Overflow();

  std::vector<Stack> stacks_;
  bool overflowed_ = false;
};

}  // namespace warp::computed::constrain
