#include "sampling/grammar_masker.h"

#include <algorithm>
#include <utility>

namespace hearth {
namespace {

constexpr int32_t kUnknown = -2;  // a transition not computed yet
constexpr int32_t kRejected = -1;
constexpr size_t kMaxOtherTransitions = size_t{1} << 20;
constexpr size_t kMaxCachedMasks = 64;  // 19 KB each for a 151,936-token vocabulary

}  // namespace

GrammarMasker::GrammarMasker(std::shared_ptr<const TokenTrie> trie, size_t max_cached_states)
    : trie_(std::move(trie)), max_states_(std::max<size_t>(max_cached_states, 1)) {}

GrammarMasker::Stats GrammarMasker::stats() const {
  Stats s = stats_;
  s.cached_states = states_.size();
  return s;
}

void GrammarMasker::bind(const GrammarMatcher& matcher) {
  if (stepper_ && grammar_ == matcher.grammar_ptr() && limits_ == matcher.limits()) return;
  grammar_ = matcher.grammar_ptr();
  limits_ = matcher.limits();
  stepper_.emplace(*grammar_, limits_);
  clear_cache();
}

void GrammarMasker::clear_cache() {
  states_.clear();
  state_index_.clear();
  ascii_next_.clear();
  other_next_.clear();
  masks_.clear();
  ++cache_epoch_;
}

int32_t GrammarMasker::intern(const GrammarState& s) {
  key_.clear();
  key_.push_back(s.complete ? 1 : 0);
  key_.push_back(static_cast<uint32_t>(s.n_stacks()));
  key_.insert(key_.end(), s.ends.begin(), s.ends.end());
  key_.insert(key_.end(), s.frames.begin(), s.frames.end());
  const auto [id, added] = state_index_.find_or_insert(key_, stack_hash(key_));
  if (added) {
    states_.push_back(s);
    states_.back().partial = {};
    ascii_next_.resize(ascii_next_.size() + 128, kUnknown);
  }
  return static_cast<int32_t>(id);
}

// Past the cache's bound: empties it, then interns again the states still in use (their
// levels get the new ids).
void GrammarMasker::make_room(std::span<Level> live) {
  std::vector<GrammarState> old = std::move(states_);
  clear_cache();
  std::vector<int32_t> new_id(old.size(), -1);
  for (Level& l : live) {
    int32_t& n = new_id[static_cast<size_t>(l.state)];
    if (n < 0) n = intern(old[static_cast<size_t>(l.state)]);
    l.state = n;
  }
}

GrammarMasker::Level GrammarMasker::start_level(const GrammarMatcher& matcher) {
  scratch_ = matcher.state();
  scratch_.partial = {};
  return {intern(scratch_), matcher.state().partial};
}

int32_t GrammarMasker::char_step(int32_t state, uint32_t cp) {
  const uint64_t other_key = (static_cast<uint64_t>(state) << 21) | cp;
  if (cp < 128) {
    const int32_t cached = ascii_next_[static_cast<size_t>(state) * 128 + cp];
    if (cached != kUnknown) return cached;
  } else if (const auto it = other_next_.find(other_key); it != other_next_.end()) {
    return it->second;
  }
  ++stats_.steps_computed;
  const StepStatus s = stepper_->step_char(states_[static_cast<size_t>(state)], cp, scratch_);
  const int32_t next = s == StepStatus::kOk ? intern(scratch_) : kRejected;
  if (cp < 128) {
    ascii_next_[static_cast<size_t>(state) * 128 + cp] = next;
  } else {
    if (other_next_.size() >= kMaxOtherTransitions) other_next_.clear();
    other_next_.emplace(other_key, next);
  }
  return next;
}

bool GrammarMasker::advance(const Level& from, uint8_t byte, Level& to) {
  Utf8Partial p = from.partial;
  uint32_t cp = 0;
  switch (utf8_push(p, byte, cp)) {
    case Utf8Push::kInvalid:
      return false;
    case Utf8Push::kMore: {
      const CharRange r = utf8_pending_range(p);
      if (!stepper_->admits_any(states_[static_cast<size_t>(from.state)], r.lo, r.hi)) return false;
      to = {from.state, p};
      return true;
    }
    case Utf8Push::kChar:
      break;
  }
  const int32_t next = char_step(from.state, cp);
  if (next < 0) return false;
  to = {next, {}};
  return true;
}

void GrammarMasker::fill(const GrammarMatcher& matcher, TokenMask& allowed) {
  allowed.reset(trie_->n_tokens());
  stats_.nodes_tried = stats_.nodes_accepted = 0;
  if (matcher.dead()) return;
  bind(matcher);
  if (states_.size() >= max_states_) make_room({});
  levels_.resize(trie_->max_depth() + 1);
  levels_[0] = start_level(matcher);
  stats_.mask_from_cache = false;
  const bool cacheable = !levels_[0].partial.pending();
  const int32_t start = levels_[0].state;
  const uint64_t epoch = cache_epoch_;
  if (cacheable)
    if (const auto it = masks_.find(start); it != masks_.end()) {
      allowed = it->second;
      stats_.mask_from_cache = true;
      return;
    }
  const auto nodes = trie_->nodes();
  size_t tried = 0, accepted = 0;
  for (size_t i = 0; i < nodes.size();) {
    const TokenTrie::Node& n = nodes[i];
    if (states_.size() >= max_states_) make_room(std::span(levels_).first(n.depth));
    ++tried;
    if (!advance(levels_[n.depth - 1], n.byte, levels_[n.depth])) {
      i = n.subtree_end;  // no token below starts with a prefix the grammar allows
      continue;
    }
    ++accepted;
    for (int32_t t : trie_->node_tokens(i)) allowed.set(t);
    ++i;
  }
  stats_.nodes_tried = tried;
  stats_.nodes_accepted = accepted;
  if (matcher.can_end())
    for (int32_t t : trie_->end_tokens()) allowed.set(t);
  if (cacheable && epoch == cache_epoch_) {
    if (masks_.size() >= kMaxCachedMasks) masks_.clear();
    masks_.emplace(start, allowed);
  }
}

bool GrammarMasker::token_allowed(const GrammarMatcher& matcher, int32_t token) {
  if (token < 0 || static_cast<size_t>(token) >= trie_->n_tokens()) return false;
  if (trie_->is_end_token(token)) return matcher.can_end();
  const std::string_view piece = trie_->piece(token);
  if (piece.empty() || matcher.dead()) return false;
  bind(matcher);
  if (states_.size() >= max_states_) make_room({});
  Level cur = start_level(matcher);
  for (char c : piece) {
    if (states_.size() >= max_states_) make_room(std::span(&cur, 1));
    Level next;
    if (!advance(cur, static_cast<uint8_t>(c), next)) return false;
    cur = next;
  }
  return true;
}

}  // namespace hearth
