// Text anchoring of the prefix cache (kv/prefix_cache.h): a prompt given as text is matched
// against the text its cached paths stand for, respecting the prompt's own tokenization.
#include <algorithm>

#include "kv/prefix_cache_node.h"

namespace hearth {

int64_t PrefixCache::match_text_below(const Node* node, int64_t pos, size_t off, const TextQuery& q,
                                      int& branches, std::vector<Step>& path) const {
  struct Candidate {
    Node* node;
    int64_t used;
    size_t bytes;
  };
  const int64_t bt = pool_.block_tokens();
  int64_t total = 0;
  std::vector<Candidate> found;
  while (true) {
    found.clear();
    for (const auto& c : node->children) {
      int64_t used = 0;
      size_t bytes = 0;
      for (size_t i = 0; i < c->tokens.size() && pos + used < q.max_tokens; ++i) {
        const auto g = static_cast<size_t>(pos + used);
        if (g < q.lead.size()) {  // matched by id; such tokens stand for no text of the prompt
          if (c->tokens[i] != q.lead[g] || (c->has_text && c->text_begin(i) != c->ends[i])) break;
        } else {
          if (!c->has_text) break;
          const std::string_view piece =
              std::string_view(c->text).substr(c->text_begin(i), c->ends[i] - c->text_begin(i));
          if (q.text.substr(off + bytes, piece.size()) != piece) break;
          if (q.splits && !q.splits->agrees(c->tokens[i], off + bytes, off + bytes + piece.size()))
            break;
          bytes += piece.size();
        }
        ++used;
      }
      if (used > 0) found.push_back({c.get(), used, bytes});
    }
    if (found.empty()) return total;
    const auto whole =
        std::count_if(found.begin(), found.end(), [&](const Candidate& c) { return c.used == bt; });
    if (whole > 1 && branches > 0) break;  // several blocks spell this text: try each below
    const Candidate* best = &found[0];
    for (const Candidate& c : found)
      if (c.used > best->used ||
          (c.used == best->used && best->node->block < 0 && c.node->block >= 0))
        best = &c;
    path.push_back({best->node, best->used});
    total += best->used;
    if (best->used < bt) return total;
    pos += best->used;
    off += best->bytes;
    node = best->node;
  }
  std::vector<Step> best_path;
  int64_t best_below = -1;
  for (const Candidate& c : found) {
    if (c.used != bt || branches-- <= 0) continue;
    std::vector<Step> sub{{c.node, c.used}};
    const int64_t below = match_text_below(c.node, pos + c.used, off + c.bytes, q, branches, sub);
    if (below > best_below) {
      best_below = below;
      best_path = std::move(sub);
    }
  }
  path.insert(path.end(), best_path.begin(), best_path.end());
  return total + bt + best_below;
}

bool PromptSplits::agrees(int32_t token, size_t begin, size_t end) const {
  // The first special span of the prompt that ends after `begin`.
  const auto it = std::upper_bound(
      specials.begin(), specials.end(), begin,
      [](size_t at, const std::pair<uint32_t, uint32_t>& s) { return at < s.second; });
  if (is_special && is_special(token))
    return it != specials.end() && it->first == begin && it->second == end;
  // A plain token (or the empty text of held-back bytes) must not touch a special one's bytes.
  return it == specials.end() || it->first >= std::max(end, begin + 1);
}

bool PromptSplits::token_ends_at(size_t at) const {
  return std::binary_search(token_ends.begin(), token_ends.end(), static_cast<uint32_t>(at));
}

PrefixMatch PrefixCache::match_text(std::span<const int32_t> lead, std::string_view text,
                                    int64_t max_tokens, int32_t state_slot,
                                    const PromptSplits* splits) {
  ++stats_.lookups;
  std::vector<Step> path;
  int branches = 64;
  int64_t pos =
      match_text_below(root_.get(), 0, 0, {lead, text, max_tokens, splits}, branches, path);
  // The text each position of the path ends at (lead tokens stand for none).
  std::vector<size_t> byte_at{0};
  for (const Step& st : path)
    for (size_t i = 0; i < static_cast<size_t>(st.used); ++i)
      byte_at.push_back(byte_at.back() + (byte_at.size() - 1 < lead.size()
                                              ? 0
                                              : st.node->ends[i] - st.node->text_begin(i)));
  // A match may not end on a token without text (bytes of an incomplete character, emitted
  // with a later token): the text after it would repeat them. With the prompt's splits, it ends
  // where a cold token does.
  auto may_end = [&](const Step& st, int64_t end) {
    const auto i = static_cast<size_t>(st.used - 1);
    if (end - 1 < static_cast<int64_t>(lead.size())) return true;
    return st.node->text_begin(i) != st.node->ends[i] &&
           (!splits || splits->token_ends_at(byte_at[static_cast<size_t>(end)]));
  };
  while (!path.empty() && !may_end(path.back(), pos)) {
    --pos;
    if (--path.back().used == 0) path.pop_back();
  }
  PrefixMatch m = take_restoring(path, state_slot, may_end);
  stats_.lookup_tokens += m.n_tokens();  // the rest is counted by the caller as new
  return m;
}

}  // namespace hearth
