// The engine's per-request state and a resolved row of a step, shared by the files that
// implement the engine (engine.cpp; engine_warm.cpp: next-turn warming; engine_speculation.cpp:
// drafting and verification). Private to the engine: nothing outside src/engine/ includes it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/output.h"

namespace hearth {

// Where a request is in its life; each status is held by one queue of the engine (engine.h).
// Whether a running sequence is prefilling or decoding is not a status: it is what its numbers
// say (n_computed against tokens, tokens generated), which is what the scheduler plans from.
enum class Engine::SeqStatus : uint8_t {
  Waiting,     // in waiting_: not admitted yet, or preempted / set aside (its cached prefix is
               // found again on admission)
  Running,     // in running_: prefilling or decoding
  Completing,  // in running_: the reply ended and its client has heard so; its last token still
               // goes through the model, as a cache-only row, so the next turn finds all of it
  Finished,    // its KV state is given back (release()); swept out of its queue
};

struct Engine::Sequence {
  int64_t id = 0;
  GenerationRequest req;
  std::vector<int32_t> tokens;  // prompt + generated
  int64_t n_computed = 0;       // tokens whose K/V are in its blocks (the KV manager's)
  // The text each token stands for (text prompts; generated pieces), for text anchoring.
  bool has_text = false;
  std::string text;
  std::vector<uint32_t> text_ends;
  size_t n_lead = 0;  // tokens added before the prompt text (BOS)
  SeqStatus status = SeqStatus::Waiting;
  bool admitted_once = false;
  SequenceOutput out;  // sampling, detokenizing, stop strings, events
  RequestStats stats;
  Clock::time_point submitted, first_token;
  bool scheduled_once = false;
  bool cancelled = false;
  int64_t admitted = 0;  // admission order (preemption picks the newest)
  // Speculative decoding: this step's row (the last token, then the drafts) and the drafts'
  // length policy.
  std::vector<int32_t> verify_row;
  int64_t n_draft = 0;
  DraftLength draft_len;

  Sequence(GenerationRequest r, const Tokenizer& t, const VocabAccess& v,
           std::shared_ptr<const TokenTrie> trie, int draft_max)
      : req(std::move(r)), out(req, t, v, std::move(trie)), draft_len(draft_max) {}
  // Next-turn warming (GenerationRequest::warm) runs at background priority: only while no other
  // request waits, runs or completes (engine_warm.cpp).
  bool background() const { return req.warm; }
  bool live() const { return status == SeqStatus::Waiting || status == SeqStatus::Running; }
  void drop_draft() {
    n_draft = 0;
    verify_row.clear();
  }
  void emit(EngineEvent e) const {
    e.request_id = id;
    if (req.on_event) req.on_event(e);
  }
};

// A row of the step's batch, resolved to its sequence.
struct Engine::Row {
  Sequence* s;
  int64_t n;
  StepRow::Kind kind;
};

}  // namespace hearth
