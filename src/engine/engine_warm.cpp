// Next-turn warming (GenerationRequest::warm): when warm requests run, how they give way, and
// what their work is counted as.
#include <algorithm>

#include "engine/engine.h"
#include "engine/sequence.h"

namespace hearth {

// Next-turn warming runs at background priority, only when nothing else does: a request of normal
// priority waiting, running or completing sets the running warm request aside at this step
// boundary (what it computed goes to the cache; it resumes from there later); else the oldest
// waiting warm request starts, one at a time.
void Engine::schedule_warm() {
  auto warm = std::find_if(running_.begin(), running_.end(), [](const auto& s) {
    return s->status == SeqStatus::Running && s->background();
  });
  const bool real_work = count(SeqStatus::Waiting, false) > 0 || any_completing() ||
                         count(SeqStatus::Running, false) > 0;
  if (real_work) {
    if (warm != running_.end()) preempt(**warm);
    return;
  }
  for (bool started = warm != running_.end(); !started;) {
    auto next = std::find_if(waiting_.begin(), waiting_.end(),
                             [](const auto& s) { return s->live() && s->background(); });
    if (next == waiting_.end()) break;
    started = admit_warm(**next);
    if (started) {
      running_.push_back(std::move(*next));
      waiting_.erase(next);
    }
  }
  sweep();
}

// Whether the pool's free blocks hold the rest of a warm request's prompt (it never evicts
// cached work): then it is Running (its caller moves it); else it is dropped, keeping what it
// had computed.
bool Engine::admit_warm(Sequence& s) {
  s.admitted = admit_counter_++;
  attach_cached_prefix(s);
  const int64_t n = static_cast<int64_t>(s.tokens.size());
  const int64_t held = (s.n_computed + kv_.block_tokens() - 1) / kv_.block_tokens();
  const int64_t need = (n + kv_.block_tokens() - 1) / kv_.block_tokens() - held + 1;
  if (n >= opt_.max_seq_tokens || need > kv_.pool().n_free()) {
    finish(s, FinishReason::Cancelled);
    return false;
  }
  s.status = SeqStatus::Running;
  return true;
}

// A finished warm request's work, for the hit and waste counts.
void Engine::record_warm(const Sequence& s) {
  const int64_t from = s.stats.cached_tokens;
  if (s.n_computed <= from) return;
  warm_records_.push_back(
      {{s.tokens.begin(), s.tokens.begin() + static_cast<ptrdiff_t>(s.n_computed)}, from});
  if (warm_records_.size() > 64) {
    const WarmRecord& old = warm_records_.front();
    totals_.warm_wasted_tokens += static_cast<int64_t>(old.tokens.size()) - old.from;
    warm_records_.pop_front();
  }
}

// A real request's cached prefix, against what warm requests computed: the warm tokens it
// reuses count as hit (once per warm request).
void Engine::count_warm_hits(const Sequence& s) {
  for (auto it = warm_records_.begin(); it != warm_records_.end();) {
    const auto n = static_cast<size_t>(std::min<int64_t>(
        s.n_computed, static_cast<int64_t>(std::min(s.tokens.size(), it->tokens.size()))));
    const auto common = static_cast<int64_t>(
        std::mismatch(it->tokens.begin(), it->tokens.begin() + static_cast<ptrdiff_t>(n),
                      s.tokens.begin())
            .first -
        it->tokens.begin());
    if (common > it->from) {
      totals_.warm_hit_tokens += common - it->from;
      it = warm_records_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace hearth
