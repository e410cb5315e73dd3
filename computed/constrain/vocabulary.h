#pragma once

// Vocabulary: a tokenizer's tokens as constrained decoding sees them. Each
// vocabulary token is the bytes it adds to the text, kept in a trie so that
// tokens sharing a prefix are matched against a grammar once; added tokens
// (special and not) are markers, which only a grammar's marker element takes.
// Tokens that add no bytes are never allowed under a grammar.
//
// Immutable after FromTokenizer; safe from any number of threads.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "computed/text/tokenizer.h"

namespace warp::computed::constrain {

class Vocabulary {
 public:
  struct Node {
    uint8_t byte = 0;  // the edge from its parent
    int32_t first_child = 0, child_count = 0;
    int32_t first_token = 0, token_count = 0;  // the tokens whose bytes end here
  };

  static Vocabulary FromTokenizer(const text::Tokenizer& tokenizer);
  // Pieces by id (nullopt: a marker or a hole), as PieceBytes gives them.
  static Vocabulary FromPieces(std::vector<std::optional<std::string>> pieces);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  const std::optional<std::string>& piece(int32_t id) const { return pieces_[id]; }
  const Node& node(int32_t index) const { return nodes_[index]; }  // 0: the root
  int32_t token(int32_t index) const { return tokens_[index]; }
  // The ids with no piece (markers, holes), in order.
  const std::vector<int32_t>& markers() const { return markers_; }

 private:
  std::vector<std::optional<std::string>> pieces_;
  std::vector<Node> nodes_;
  std::vector<int32_t> tokens_;
  std::vector<int32_t> markers_;
};

}  // namespace warp::computed::constrain
