#include "engine/scheduler.h"

#include <algorithm>

namespace hearth {

const StepRow* StepPlan::find(int64_t id) const {
  for (const StepRow& r : rows)
    if (r.id == id) return &r;
  return nullptr;
}

void StepPlan::drop(int64_t id) {
  std::erase_if(rows, [&](const StepRow& r) { return r.id == id; });
}

void StepPlan::drop_completing() {
  std::erase_if(rows, [](const StepRow& r) { return r.kind == StepRow::Kind::Completing; });
}

size_t Scheduler::admit(std::span<const WaitingFacts> waiting, int n_running) const {
  size_t n = 0;
  while (n_running + static_cast<int>(n) < max_running_ && n < waiting.size() &&
         !waiting[n].continues_completing)
    ++n;
  return n;
}

StepPlan Scheduler::plan(std::span<const SeqFacts> completing, std::span<const SeqFacts> running) {
  StepPlan plan;
  int64_t budget = step_tokens_;
  for (const SeqFacts& s : completing) {
    plan.rows.push_back({s.id, 1, StepRow::Kind::Completing});
    --budget;
  }
  std::vector<const SeqFacts*> prefill;
  for (const SeqFacts& s : running) {
    const int64_t remaining = s.remaining();
    if (remaining == 1 && s.generated) {
      plan.rows.push_back({s.id, 1 + s.draft, StepRow::Kind::Decode});
      budget -= 1 + s.draft;
    } else if (remaining > 0) {
      prefill.push_back(&s);
    }
  }
  if (!prefill.empty() && budget > 0) plan_prefill(prefill, budget, plan);
  return plan;
}

void Scheduler::plan_prefill(std::vector<const SeqFacts*>& prefill, int64_t budget,
                             StepPlan& plan) {
  // Chunks are capped where the sequence must stop (stop_at); the order stays by what remains.
  auto rem = [](const SeqFacts* s) { return s->chunk_limit(); };
  auto order = [](const SeqFacts* s) { return s->remaining(); };
  const SeqFacts* oldest = *std::min_element(
      prefill.begin(), prefill.end(), [](auto* a, auto* b) { return a->admitted < b->admitted; });
  std::stable_sort(prefill.begin(), prefill.end(),
                   [&](auto* a, auto* b) { return order(a) < order(b); });
  int64_t reserve = std::min({rem(oldest), std::max<int64_t>(1, step_tokens_ / 8), budget});
  // When every newer prompt fits in this step, they get it to themselves unless the oldest's
  // rest fits too (a short request then gets its first token after a step as short as on an
  // idle server: filling the budget with part of a long prompt would lengthen it) — every
  // other step at most, so the oldest still advances.
  int64_t newer = 0;
  for (const SeqFacts* s : prefill)
    if (s != oldest) newer += rem(s);
  if (newer > 0 && newer <= budget && !reserve_skipped_) {
    reserve = 0;
    if (newer + rem(oldest) > budget) budget = newer;
    reserve_skipped_ = true;
  } else {
    reserve_skipped_ = false;
  }
  // Chunks are sized by what they cost (engine/step_cost.h): the budget is what its tokens
  // cost at depth 0, and a chunk deep in a prompt takes fewer tokens for the same time.
  const double total = cost_.chunk(0, budget);
  const double for_others = total - cost_.chunk(0, reserve);
  double used = 0;
  for (const SeqFacts* s : prefill) {
    if (s == oldest || used >= for_others) continue;
    const int64_t n = cost_.fit(s->computed, rem(s), for_others - used);
    plan.rows.push_back({s->id, n, StepRow::Kind::Prefill});
    used += cost_.chunk(s->computed, n);
  }
  const double left = total - used;
  const int64_t n = cost_.fit(oldest->computed, rem(oldest), left);
  if (reserve > 0 || cost_.chunk(oldest->computed, n) <= left)
    plan.rows.push_back({oldest->id, n, StepRow::Kind::Prefill});
}

Shortage Scheduler::on_shortage(std::span<const SeqFacts> running, bool any_completing) {
  // Finished replies hold blocks only to cache their last token: they give way before a
  // running sequence is preempted (recomputed later) or failed.
  if (any_completing) return {Shortage::Action::ReleaseCompleting, -1};
  if (running.size() == 1) return {Shortage::Action::ContextFull, running.front().id};
  const auto newest = std::max_element(
      running.begin(), running.end(),
      [](const SeqFacts& a, const SeqFacts& b) { return a.admitted < b.admitted; });
  return {Shortage::Action::Preempt, newest->id};
}

}  // namespace hearth
