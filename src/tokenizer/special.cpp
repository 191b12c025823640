#include "tokenizer/special.h"

#include <array>

namespace hearth {

namespace {

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

}  // namespace

std::vector<Fragment> split_special_tokens(const Vocab& vocab, std::string_view text,
                                           bool parse_special) {
  std::vector<Fragment> fragments;
  if (text.empty()) return fragments;
  fragments.push_back({kNoToken, 0, text.size()});

  // Bytes present in the text: a token whose first byte is absent cannot match (cheap skip).
  std::array<bool, 256> present{};
  for (char c : text) present[static_cast<unsigned char>(c)] = true;

  std::vector<Fragment> next;
  for (const TokenId id : vocab.special_tokens()) {
    const uint32_t attr = vocab.attr(id);
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view special = vocab.text(id);
    if (special.empty() || !present[static_cast<unsigned char>(special[0])]) continue;

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
        const size_t match = text.substr(0, end).find(special, pos);
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
