#include "computed/constrain/vocabulary.h"

#include <algorithm>
#include <deque>

namespace warp::computed::constrain {

Vocabulary Vocabulary::FromTokenizer(const text::Tokenizer& tokenizer) {
  std::vector<std::optional<std::string>> pieces(tokenizer.vocab_size());
  for (int32_t id = 0; id < tokenizer.vocab_size(); ++id) pieces[id] = tokenizer.PieceBytes(id);
  return FromPieces(std::move(pieces));
}

Vocabulary Vocabulary::FromPieces(std::vector<std::optional<std::string>> pieces) {
  Vocabulary vocabulary;
  vocabulary.pieces_ = std::move(pieces);
  std::vector<int32_t> order;
  for (int32_t id = 0; id < vocabulary.size(); ++id) {
    const std::optional<std::string>& piece = vocabulary.pieces_[id];
    if (!piece) vocabulary.markers_.push_back(id);
    if (piece && !piece->empty()) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return *vocabulary.pieces_[a] != *vocabulary.pieces_[b]
               ? *vocabulary.pieces_[a] < *vocabulary.pieces_[b]
               : a < b;
  });
  // Breadth first, so that each node's children are adjacent: a node covers
  // order[lo, hi), the pieces that start with its path of `depth` bytes.
  struct Pending {
    int32_t node;
    size_t lo, hi, depth;
  };
  vocabulary.nodes_.push_back(Node{});
  std::deque<Pending> queue{{0, 0, order.size(), 0}};
  while (!queue.empty()) {
    auto [index, lo, hi, depth] = queue.front();
    queue.pop_front();
    auto piece = [&](size_t k) -> const std::string& { return *vocabulary.pieces_[order[k]]; };
    vocabulary.nodes_[index].first_token = static_cast<int32_t>(vocabulary.tokens_.size());
    while (lo < hi && piece(lo).size() == depth) vocabulary.tokens_.push_back(order[lo++]);
    vocabulary.nodes_[index].token_count =
        static_cast<int32_t>(vocabulary.tokens_.size()) - vocabulary.nodes_[index].first_token;
    vocabulary.nodes_[index].first_child = static_cast<int32_t>(vocabulary.nodes_.size());
    while (lo < hi) {
      const char byte = piece(lo)[depth];
      size_t end = lo;
      while (end < hi && piece(end)[depth] == byte) ++end;
      vocabulary.nodes_.push_back(Node{.byte = static_cast<uint8_t>(byte)});
      queue.push_back({static_cast<int32_t>(vocabulary.nodes_.size() - 1), lo, end, depth + 1});
      ++vocabulary.nodes_[index].child_count;
      lo = end;
    }
  }
  return vocabulary;
}

}  // namespace warp::computed::constrain
