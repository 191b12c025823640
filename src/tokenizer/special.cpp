#include "tokenizer/special.h"

#include <cstdint>

namespace hearth {

namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

bool inside(const ByteRanges& ranges, size_t begin, size_t end) {
  for (const auto& [b, e] : ranges)
    if (begin >= b && end <= e) return true;
  return false;
}

}  // namespace

std::vector<Fragment> split_special_tokens(const Vocab& vocab, std::string_view text,
                                           bool parse_special, const ByteRanges* control_ranges) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});

  // One pass over the text with the trie of special texts marks the tokens that occur at all
  // (anywhere, overlaps included); only those need the splitting passes below. O(text length x
  // trie depth) whatever the number of special tokens (DeepSeek has ~2400).
  const std::vector<TokenId>& specials = vocab.special_tokens();
  const Vocab::SpecialTrie& trie = vocab.special_trie();
  if (specials.empty() || (!parse_special && !trie.any_always)) return fragments;
  std::vector<uint8_t> occurs(specials.size(), 0);
  bool any = false;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    // Most positions end here: no special text starts with this byte.
    uint32_t node = trie.root[static_cast<uint8_t>(text[i])];
    for (size_t j = i + 1; node != 0; ++j) {
      const int32_t k = trie.nodes[node].special;  // a special text ends at j
      if (k >= 0 && !occurs[static_cast<size_t>(k)]) {
        occurs[static_cast<size_t>(k)] = 1;
        any = true;
      }
      if (j == n) break;
      node = trie.child(node, static_cast<uint8_t>(text[j]));
    }
  }
  if (!any) return fragments;

  std::vector<Fragment> next;
  for (size_t k = 0; k < specials.size(); ++k) {
    if (!occurs[k]) continue;
    const TokenId id = specials[k];
    const uint32_t attr = vocab.attr(id);
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view special = vocab.text(id);
    const bool ranged = control_ranges && (attr & (kAttrControl | kAttrUnknown));

    bool changed = false;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.is_token()) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.offset;
      const size_t end = f.offset + f.length;
      while (pos < end) {
        size_t match = text.substr(0, end).find(special, pos);
        while (ranged && match != std::string_view::npos &&
               !inside(*control_ranges, match, match + special.size()))
          match = text.substr(0, end).find(special, match + 1);
        if (match == std::string_view::npos) break;
        changed = true;
        size_t left_end = match;
        if (attr & kAttrLStrip) {
          while (left_end > pos && is_ascii_space(text[left_end - 1])) --left_end;
        }
        if (left_end > pos) next.push_back({kNoToken, pos, left_end - pos});
        next.push_back({id, 0, 0});
        pos = match + special.size();
        if (attr & kAttrRStrip) {
          while (pos < end && is_ascii_space(text[pos])) ++pos;
        }
      }
      if (pos < end) next.push_back({kNoToken, pos, end - pos});
    }
    if (changed) fragments.swap(next);
  }
  return fragments;
}

}  // namespace hearth
