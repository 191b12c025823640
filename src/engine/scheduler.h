// The engine's scheduling policy, apart from the mechanism: from plain facts about the waiting
// and running sequences to a plain plan of what the next step computes. It knows nothing of the
// model, the KV pool's blocks, the forward pass or sampling, so it is tested with plain structs.
//
// A step is planned in three calls, as the engine learns the facts each needs:
//   admit()       how many waiting requests join the running set (their cached prefixes, found
//                 on admission, change what they still have to compute);
//   plan()        the step's rows: a token for each finished reply still caching its last one,
//                 a decode token for each decoding sequence, then prefill chunks in the budget;
//   on_shortage() when the KV pool cannot hold the plan's tokens (known only by allocating:
//                 the prefix cache's eviction and copy-on-write decide what a block costs),
//                 who gives way next. The engine applies it, drops the rows of whoever left
//                 the running set, and allocates again.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/step_cost.h"

namespace hearth {

// A sequence in the running set, or a finished reply still caching its last token.
struct SeqFacts {
  int64_t id = 0;
  int64_t admitted = 0;     // admission order: larger is newer
  int64_t computed = 0;     // tokens whose K/V are in the pool
  int64_t total = 0;        // prompt + generated tokens
  bool generated = false;   // has generated a token: its last one left is a decode token
  bool completing = false;  // finished; its last token still goes through the model
  // A position where its prefill chunk must end (the KV manager snapshots the recurrent state
  // there); 0 or <= computed: none.
  int64_t stop_at = 0;
  // Tokens drafted after its last one (speculative decoding): its decode row verifies them too.
  int64_t draft = 0;
  int64_t remaining() const { return total - computed; }
  // The most tokens its next prefill chunk may take.
  int64_t chunk_limit() const {
    return stop_at > computed ? std::min(total, stop_at) - computed : remaining();
  }
};

// A request waiting for admission, front of the queue first.
struct WaitingFacts {
  int64_t id = 0;
  // It continues a finished reply whose last token is not cached yet (the next turn of a
  // conversation, a request resent): it waits one step so that it finds the whole reply.
  bool continues_completing = false;
};

struct StepRow {
  enum class Kind : uint8_t { Completing, Decode, Prefill };
  int64_t id = 0;
  int64_t n = 0;  // tokens this step, from the sequence's `computed`
  Kind kind = Kind::Prefill;
  bool operator==(const StepRow&) const = default;
};

// One step's batch, in the order its rows are given blocks and computed: completing replies,
// decode tokens, then prefill chunks.
struct StepPlan {
  std::vector<StepRow> rows;

  bool empty() const { return rows.empty(); }
  const StepRow* find(int64_t id) const;
  void drop(int64_t id);   // a sequence that left the running set
  void drop_completing();  // the completing replies gave way
};

// Who gives way when the pool cannot hold the plan's tokens.
struct Shortage {
  enum class Action : uint8_t {
    ReleaseCompleting,  // every completing reply caches what it has and leaves
    Preempt,            // `id` frees its blocks and waits again (recomputed later: exact)
    ContextFull,        // `id` is alone and still does not fit the whole pool: it never will
  };
  Action action = Action::ReleaseCompleting;
  int64_t id = -1;
  bool operator==(const Shortage&) const = default;
};

class Scheduler {
 public:
  // step_tokens: the step budget, in tokens at depth 0 (engine/step_cost.h).
  Scheduler(int64_t step_tokens, int max_running, StepCost cost)
      : step_tokens_(step_tokens), max_running_(max_running), cost_(cost) {}

  // How many requests from the front of `waiting` to admit: first come, first admitted, while
  // the running set has room, up to a request that continues a completing reply.
  size_t admit(std::span<const WaitingFacts> waiting, int n_running) const;

  // The step's rows. Decode tokens first (one per decoding sequence and its drafts, always
  // scheduled; one per completing reply), then prefill chunks within what is left of the budget:
  // shortest remaining prompt first, so a short request is not stuck behind a long one, while the
  // oldest prefill keeps an eighth of the budget so it cannot starve; newer prompts that all fit
  // get the step to themselves, every other step at most. Chunks are sized by their cost at their
  // depth and end at the sequence's stop_at.
  StepPlan plan(std::span<const SeqFacts> completing, std::span<const SeqFacts> running);

  // With blocks short: completing replies give way first; then a sequence alone in the running
  // set fails (the pool cannot hold it); else the newest admitted is preempted (LIFO, so the
  // oldest conversations keep making progress).
  static Shortage on_shortage(std::span<const SeqFacts> running, bool any_completing);

 private:
  void plan_prefill(std::vector<const SeqFacts*>& prefill, int64_t budget, StepPlan& plan);

  int64_t step_tokens_;
  int max_running_;
  StepCost cost_;
  bool reserve_skipped_ = false;  // the oldest prefill gave up its share last step
};

}  // namespace hearth
