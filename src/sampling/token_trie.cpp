#include "sampling/token_trie.h"

#include <algorithm>
#include <limits>

#include "util/error.h"

namespace hearth {

TokenTrie::TokenTrie(const std::vector<std::string>& pieces, std::vector<int32_t> end_tokens)
    : end_tokens_(std::move(end_tokens)) {
  if (pieces.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    fail("token trie: {} tokens is too many", pieces.size());
  piece_begin_.reserve(pieces.size() + 1);
  for (const std::string& p : pieces) {
    piece_begin_.push_back(static_cast<uint32_t>(bytes_.size()));
    bytes_ += p;
    if (bytes_.size() >= std::numeric_limits<uint32_t>::max())
      fail("token trie: the pieces are more than 4 GiB");
  }
  piece_begin_.push_back(static_cast<uint32_t>(bytes_.size()));
  std::sort(end_tokens_.begin(), end_tokens_.end());
  for (int32_t t : end_tokens_)
    if (t < 0 || static_cast<size_t>(t) >= pieces.size())
      fail("token trie: end token {} is not in the vocabulary of {}", t, pieces.size());

  // Sorted pieces share their prefixes with their neighbours: each piece adds the nodes
  // past its common prefix with the one before, which yields depth-first order directly.
  std::vector<int32_t> order;
  for (size_t t = 0; t < pieces.size(); ++t)
    if (!pieces[t].empty() && !is_end_token(static_cast<int32_t>(t)))
      order.push_back(static_cast<int32_t>(t));
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return piece(a) < piece(b); });
  std::vector<uint32_t> path;  // the nodes of the previous piece's prefix
  std::string_view prev;
  for (int32_t t : order) {
    const std::string_view p = piece(t);
    size_t common = 0;
    while (common < prev.size() && common < p.size() && prev[common] == p[common]) ++common;
    for (; path.size() > common; path.pop_back())
      nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
    for (size_t d = common; d < p.size(); ++d) {
      path.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back({0, static_cast<uint32_t>(token_ids_.size()), static_cast<uint32_t>(d + 1),
                        static_cast<uint8_t>(p[d])});
    }
    token_ids_.push_back(t);  // belongs to the newest node: this piece's, or an equal piece's
    max_depth_ = std::max(max_depth_, p.size());
    prev = p;
  }
  for (; !path.empty(); path.pop_back())
    nodes_[path.back()].subtree_end = static_cast<uint32_t>(nodes_.size());
  nodes_.push_back({0, static_cast<uint32_t>(token_ids_.size()), 0, 0});
}

bool TokenTrie::is_end_token(int32_t token) const {
  return std::binary_search(end_tokens_.begin(), end_tokens_.end(), token);
}

}  // namespace hearth
