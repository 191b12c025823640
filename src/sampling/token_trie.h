// The vocabulary's token pieces as a prefix tree over bytes, built once per vocabulary, so
// that the tokens a grammar allows can be found by one depth-first walk that drops every
// subtree whose prefix the grammar rejects (grammar_masker.h).
//
// The nodes are stored in depth-first order, each with the index just past its subtree: the
// walk is a scan of one array that skips a rejected subtree by a jump.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

class TokenTrie {
 public:
  struct Node {
    uint32_t subtree_end;  // index just past the last node below this one
    uint32_t token_begin;  // this node's tokens: token_ids[token_begin .. next node's]
    uint32_t depth;        // length of the node's prefix (1 for a first byte)
    uint8_t byte;          // the prefix's last byte
  };

  // pieces[id] is token id's text as bytes. An empty piece is never allowed by the walk (the
  // caller passes special and control tokens as empty). end_tokens (end of generation) are
  // left out of the tree: they are allowed exactly when the grammar can end.
  TokenTrie(const std::vector<std::string>& pieces, std::vector<int32_t> end_tokens);

  size_t n_tokens() const { return piece_begin_.size() - 1; }
  std::string_view piece(int32_t token) const {
    const auto t = static_cast<size_t>(token);
    return std::string_view(bytes_).substr(piece_begin_[t], piece_begin_[t + 1] - piece_begin_[t]);
  }
  std::span<const int32_t> end_tokens() const { return end_tokens_; }
  bool is_end_token(int32_t token) const;

  // Depth-first order; a prefix comes before its extensions, siblings by byte.
  std::span<const Node> nodes() const { return std::span(nodes_).first(nodes_.size() - 1); }
  std::span<const int32_t> node_tokens(size_t node) const {
    return std::span(token_ids_)
        .subspan(nodes_[node].token_begin, nodes_[node + 1].token_begin - nodes_[node].token_begin);
  }
  // The longest piece in the tree.
  size_t max_depth() const { return max_depth_; }

 private:
  std::string bytes_;                  // every piece, one after another
  std::vector<uint32_t> piece_begin_;  // token t's piece is bytes_[piece_begin_[t] .. [t + 1])
  std::vector<int32_t> end_tokens_;    // sorted
  std::vector<Node> nodes_;            // plus a last node that only ends the token ranges
  std::vector<int32_t> token_ids_;
  size_t max_depth_ = 0;
};

}  // namespace hearth
