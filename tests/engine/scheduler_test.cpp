// The scheduling policy on plain facts, without a model: decode rows always scheduled, prefill
// chunks shortest first within the budget, the oldest prefill's reserve, the every-other-step
// rule, chunks sized by cost at depth, and who gives way when the KV pool runs short.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include "qwen3_shape.h"

namespace hearth {
namespace {

using Kind = StepRow::Kind;

using test::qwen3_06b;

const StepCost kCost(qwen3_06b());

// A sequence in prefill: `computed` of `total` prompt tokens done.
SeqFacts prefilling(int64_t id, int64_t admitted, int64_t computed, int64_t total) {
  return {id, admitted, computed, total, false, false};
}

// A sequence past its prefill: its last sampled token is still to compute.
SeqFacts decoding(int64_t id, int64_t admitted, int64_t total) {
  return {id, admitted, total - 1, total, true, false};
}

SeqFacts completing(int64_t id, int64_t total) {
  return {id, 0, total - 1, total, true, true};
}

double cost_of(const StepPlan& plan, const std::vector<SeqFacts>& running) {
  double c = 0;
  for (const StepRow& r : plan.rows)
    for (const SeqFacts& s : running)
      if (s.id == r.id && r.kind == Kind::Prefill) c += kCost.chunk(s.computed, r.n);
  return c;
}

TEST(Scheduler, DecodeRowsAreAlwaysScheduledEvenPastTheBudget) {
  Scheduler sched(8, 16, kCost);
  std::vector<SeqFacts> running;
  for (int64_t i = 0; i < 10; ++i) running.push_back(decoding(i + 1, i, 50 + i));
  running.push_back(prefilling(11, 10, 0, 40));
  const StepPlan plan = sched.plan({}, running);
  ASSERT_EQ(plan.rows.size(), 10u);  // the budget went to decoding: no prefill this step
  for (int64_t i = 0; i < 10; ++i)
    EXPECT_EQ(plan.rows[static_cast<size_t>(i)], (StepRow{i + 1, 1, Kind::Decode}));
}

TEST(Scheduler, DecodeTokensComeOutOfTheBudgetBeforePrefill) {
  Scheduler sched(32, 8, kCost);
  const std::vector<SeqFacts> running = {decoding(1, 0, 30), prefilling(2, 1, 0, 100),
                                         decoding(3, 2, 12)};
  const StepPlan plan = sched.plan({}, running);
  ASSERT_EQ(plan.rows.size(), 3u);
  EXPECT_EQ(plan.rows[0], (StepRow{1, 1, Kind::Decode}));
  EXPECT_EQ(plan.rows[1], (StepRow{3, 1, Kind::Decode}));
  EXPECT_EQ(plan.rows[2], (StepRow{2, 30, Kind::Prefill}));  // 32 - 2 decode tokens
}

TEST(Scheduler, CompletingRepliesGetTheirLastTokenFirst) {
  Scheduler sched(32, 8, kCost);
  const std::vector<SeqFacts> done = {completing(7, 40), completing(8, 9)};
  const std::vector<SeqFacts> running = {prefilling(1, 0, 0, 100), decoding(2, 1, 20)};
  const StepPlan plan = sched.plan(done, running);
  ASSERT_EQ(plan.rows.size(), 4u);
  EXPECT_EQ(plan.rows[0], (StepRow{7, 1, Kind::Completing}));
  EXPECT_EQ(plan.rows[1], (StepRow{8, 1, Kind::Completing}));
  EXPECT_EQ(plan.rows[2], (StepRow{2, 1, Kind::Decode}));
  EXPECT_EQ(plan.rows[3], (StepRow{1, 29, Kind::Prefill}));
}

TEST(Scheduler, APromptWithOneTokenLeftAndNothingGeneratedIsPrefill) {
  // All of the prompt but its last token came from the prefix cache: that token runs for
  // logits, as a prefill chunk.
  Scheduler sched(32, 8, kCost);
  const StepPlan plan = sched.plan({}, std::vector{prefilling(1, 0, 63, 64)});
  ASSERT_EQ(plan.rows.size(), 1u);
  EXPECT_EQ(plan.rows[0], (StepRow{1, 1, Kind::Prefill}));
}

TEST(Scheduler, PromptsThatAllFitShareTheStep) {
  Scheduler sched(64, 8, kCost);
  const std::vector<SeqFacts> running = {prefilling(1, 0, 0, 12), prefilling(2, 1, 0, 12),
                                         prefilling(3, 2, 0, 12), prefilling(4, 3, 0, 12)};
  const StepPlan plan = sched.plan({}, running);
  ASSERT_EQ(plan.rows.size(), 4u);
  for (const SeqFacts& s : running) {
    const StepRow* r = plan.find(s.id);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->n, 12);
  }
  EXPECT_EQ(plan.rows.back().id, 1);  // the oldest is planned last, with what is left
}

// A sequence whose recurrent state is to be snapshotted at a position (stop_at) gets a chunk
// that ends exactly there, and the budget it leaves goes to the others; decode rows ignore it.
TEST(Scheduler, PrefillChunksEndAtTheSequencesStop) {
  Scheduler sched(64, 8, kCost);
  SeqFacts a = prefilling(1, 0, 4, 41);
  a.stop_at = 16;
  SeqFacts b = prefilling(2, 1, 0, 40);
  b.stop_at = 3;
  SeqFacts c = decoding(3, 2, 50);
  c.stop_at = 64;
  SeqFacts d = prefilling(4, 3, 20, 30);
  d.stop_at = 20;  // not ahead of what it computed: no stop
  const std::vector<SeqFacts> running = {a, b, c, d};
  const StepPlan plan = sched.plan({}, running);
  ASSERT_NE(plan.find(1), nullptr);
  ASSERT_NE(plan.find(2), nullptr);
  ASSERT_NE(plan.find(3), nullptr);
  ASSERT_NE(plan.find(4), nullptr);
  EXPECT_EQ(plan.find(1)->n, 12);
  EXPECT_EQ(plan.find(2)->n, 3);
  EXPECT_EQ(plan.find(3)->n, 1);
  EXPECT_EQ(plan.find(4)->n, 10);
  EXPECT_EQ(a.chunk_limit(), 12);
  EXPECT_EQ(d.chunk_limit(), d.remaining());
}

TEST(Scheduler, ShortestRemainingPromptFirst) {
  Scheduler sched(32, 8, kCost);
  // The oldest's reserve aside, the newer prompts go shortest first: 90 left, then 200.
  const std::vector<SeqFacts> running = {prefilling(1, 0, 0, 500), prefilling(2, 1, 0, 200),
                                         prefilling(3, 2, 10, 100)};
  const StepPlan plan = sched.plan({}, running);
  ASSERT_GE(plan.rows.size(), 2u);
  EXPECT_EQ(plan.rows[0].id, 3);
  EXPECT_EQ(plan.rows.back().id, 1);
}

TEST(Scheduler, NewerPromptsThatFitGetTheStepEveryOtherStep) {
  // A long prompt (the oldest) and two short newer ones that fit one step together: they get
  // the step to themselves (the budget cut to their size, so the step is as short as on an
  // idle server), but every other step at most, so the long one still advances.
  Scheduler sched(32, 8, kCost);
  const std::vector<SeqFacts> running = {prefilling(1, 0, 64, 364), prefilling(2, 1, 0, 20),
                                         prefilling(3, 2, 0, 10)};
  const StepPlan first = sched.plan({}, running);
  ASSERT_EQ(first.rows.size(), 2u);
  EXPECT_EQ(first.rows[0], (StepRow{3, 10, Kind::Prefill}));
  EXPECT_EQ(first.rows[1], (StepRow{2, 20, Kind::Prefill}));

  const StepPlan second = sched.plan({}, running);  // the same facts: the oldest's turn
  ASSERT_EQ(second.rows.size(), 3u);
  EXPECT_EQ(second.rows[2].id, 1);
  EXPECT_GE(second.rows[2].n, 1);

  const StepPlan third = sched.plan({}, running);  // and the newer ones' again
  EXPECT_EQ(third.rows, first.rows);
}

TEST(Scheduler, TheOldestPromptsRestFittingTooKeepsTheWholeBudget) {
  Scheduler sched(32, 8, kCost);
  const std::vector<SeqFacts> running = {prefilling(1, 0, 0, 10), prefilling(2, 1, 0, 12)};
  const StepPlan plan = sched.plan({}, running);
  ASSERT_EQ(plan.rows.size(), 2u);
  EXPECT_EQ(plan.rows[0], (StepRow{2, 12, Kind::Prefill}));
  EXPECT_EQ(plan.rows[1], (StepRow{1, 10, Kind::Prefill}));
}

TEST(Scheduler, TheOldestPrefillKeepsAnEighthOfTheBudget) {
  // Newer prompts that do not fit the step would take all of it: the oldest keeps its reserve,
  // step after step. (A newer prompt that finds any allowance left gets at least a token, as
  // every scheduled chunk advances: here one token of the reserve.)
  Scheduler sched(64, 8, kCost);
  const std::vector<SeqFacts> running = {prefilling(1, 0, 0, 1000), prefilling(2, 1, 0, 300),
                                         prefilling(3, 2, 0, 400)};
  const double for_others = kCost.chunk(0, 64) - kCost.chunk(0, 8);
  const int64_t first = kCost.fit(0, 300, for_others);
  for (int step = 0; step < 4; ++step) {
    const StepPlan plan = sched.plan({}, running);
    ASSERT_EQ(plan.rows.size(), 3u) << "step " << step;
    EXPECT_EQ(plan.rows[0], (StepRow{2, first, Kind::Prefill}));
    EXPECT_EQ(plan.rows[1], (StepRow{3, 1, Kind::Prefill}));
    EXPECT_EQ(plan.rows[2], (StepRow{1, 7, Kind::Prefill}));
  }
}

TEST(Scheduler, ALongPromptAdvancesWhileShortOnesKeepArriving) {
  // Fairness: a new short prompt joins every step; the long one still advances at least every
  // other step, and each short one is done within two steps.
  Scheduler sched(32, 64, kCost);
  std::vector<SeqFacts> running = {prefilling(1, 0, 0, 600)};
  int64_t next = 2;
  int idle_steps = 0, longest_idle = 0;
  for (int step = 0; step < 40; ++step) {
    running.push_back(prefilling(next, next - 1, 0, 20));
    ++next;
    const StepPlan plan = sched.plan({}, running);
    EXPECT_LE(cost_of(plan, running), kCost.chunk(0, 32) + 1e-9) << "step " << step;
    idle_steps = plan.find(1) ? 0 : idle_steps + 1;
    longest_idle = std::max(longest_idle, idle_steps);
    for (const StepRow& r : plan.rows)
      for (SeqFacts& s : running)
        if (s.id == r.id) s.computed += r.n;
    std::erase_if(running, [](const SeqFacts& s) { return s.id != 1 && s.remaining() == 0; });
    for (const SeqFacts& s : running) {
      if (s.id != 1) {
        EXPECT_GE(s.id, next - 2) << "a short prompt waited more than two steps";
      }
    }
  }
  EXPECT_LE(longest_idle, 1);
  EXPECT_GT(running.front().computed, 0);
}

TEST(Scheduler, DeepChunksAreSizedByTheirCost) {
  Scheduler sched(32, 8, kCost);
  const StepPlan shallow = sched.plan({}, std::vector{prefilling(1, 0, 0, 3000)});
  ASSERT_EQ(shallow.rows.size(), 1u);
  EXPECT_EQ(shallow.rows[0].n, 32);
  const StepPlan deep = sched.plan({}, std::vector{prefilling(1, 0, 2000, 3000)});
  ASSERT_EQ(deep.rows.size(), 1u);
  const int64_t n = deep.rows[0].n;
  EXPECT_LT(n, 32);
  EXPECT_EQ(n, kCost.fit(2000, 1000, kCost.chunk(0, 32)));
  EXPECT_LE(kCost.chunk(2000, n), kCost.chunk(0, 32));
  EXPECT_GT(kCost.chunk(2000, n + 1), kCost.chunk(0, 32));
}

TEST(Scheduler, AdmitsInOrderUpToTheRunningLimit) {
  Scheduler sched(32, 4, kCost);
  const std::vector<WaitingFacts> waiting = {{1, false}, {2, false}, {3, false}};
  EXPECT_EQ(sched.admit(waiting, 0), 3u);
  EXPECT_EQ(sched.admit(waiting, 2), 2u);
  EXPECT_EQ(sched.admit(waiting, 4), 0u);
  EXPECT_EQ(sched.admit({}, 0), 0u);
}

TEST(Scheduler, ARequestContinuingACompletingReplyWaitsAndSoDoThoseBehindIt) {
  Scheduler sched(32, 8, kCost);
  const std::vector<WaitingFacts> waiting = {{1, false}, {2, true}, {3, false}};
  EXPECT_EQ(sched.admit(waiting, 0), 1u);
  EXPECT_EQ(sched.admit(std::span(waiting).subspan(1), 1), 0u);
}

TEST(Scheduler, ShortBlocksPreemptTheNewestAdmittedFirst) {
  std::vector<SeqFacts> running = {decoding(10, 0, 50), decoding(11, 3, 50),
                                   prefilling(12, 1, 0, 80), decoding(13, 2, 50)};
  std::vector<int64_t> order;
  for (;;) {
    const Shortage s = Scheduler::on_shortage(running, false);
    if (s.action != Shortage::Action::Preempt) {
      EXPECT_EQ(s, (Shortage{Shortage::Action::ContextFull, 10}));  // the oldest, alone
      break;
    }
    order.push_back(s.id);
    std::erase_if(running, [&](const SeqFacts& f) { return f.id == s.id; });
  }
  EXPECT_EQ(order, (std::vector<int64_t>{11, 13, 12}));
}

TEST(Scheduler, CompletingRepliesGiveWayBeforeAnyPreemption) {
  const std::vector<SeqFacts> running = {decoding(1, 0, 50), decoding(2, 1, 50)};
  EXPECT_EQ(Scheduler::on_shortage(running, true).action, Shortage::Action::ReleaseCompleting);
  const std::vector<SeqFacts> alone = {prefilling(1, 0, 0, 5000)};
  EXPECT_EQ(Scheduler::on_shortage(alone, true).action, Shortage::Action::ReleaseCompleting);
}

TEST(Scheduler, ALoneSequenceTooBigForThePoolIsContextFull) {
  const std::vector<SeqFacts> alone = {prefilling(5, 3, 0, 5000)};
  EXPECT_EQ(Scheduler::on_shortage(alone, false), (Shortage{Shortage::Action::ContextFull, 5}));
}

TEST(Scheduler, PlansDropTheRowsOfWhoeverLeaves) {
  Scheduler sched(32, 8, kCost);
  const std::vector<SeqFacts> done = {completing(7, 40)};
  const std::vector<SeqFacts> running = {decoding(1, 0, 30), prefilling(2, 1, 0, 20)};
  StepPlan plan = sched.plan(done, running);
  ASSERT_EQ(plan.rows.size(), 3u);
  plan.drop(2);
  EXPECT_EQ(plan.find(2), nullptr);
  plan.drop_completing();
  ASSERT_EQ(plan.rows.size(), 1u);
  EXPECT_EQ(plan.rows[0], (StepRow{1, 1, Kind::Decode}));
}

}  // namespace
}  // namespace hearth
