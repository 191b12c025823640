// Speculative decoding in the engine (engine/speculation.h, engine/draft_model.h): drafts for
// each decoding sequence before a step, the draft model following prefill chunks, and the
// verification of a row's drafts after it.
#include <algorithm>

#include "engine/engine.h"
#include "engine/sequence.h"
#include "util/error.h"
#include "util/log.h"

namespace hearth {

// --spec draft: the draft model computes this step's prefill chunks too (engine/draft_model.h).
void Engine::draft_follows(const std::vector<Row>& rows) {
  if (!draft_) return;
  std::vector<DraftAsk> asks;
  for (const Row& r : rows)
    if (r.kind == StepRow::Kind::Prefill && !r.s->background())
      asks.push_back(
          {r.s->id,
           std::span<const int32_t>(r.s->tokens)
               .first(static_cast<size_t>(std::min<int64_t>(
                   r.s->n_computed + r.n, static_cast<int64_t>(r.s->tokens.size()) - 1))),
           0});
  try {
    draft_->follow(asks);
  } catch (const Error& e) {  // it catches up later, or drafts nothing
    log::warn("draft model: {}", e.what());
  }
}

// Speculative decoding: each decoding sequence's drafts for this step (engine/speculation.h),
// never more than the reply's length or the context leaves room for.
void Engine::propose_drafts() {
  std::vector<Sequence*> asking;
  std::vector<DraftAsk> asks;
  for (auto& sp : running_) {
    Sequence& s = *sp;
    s.drop_draft();
    const auto n_tokens = static_cast<int64_t>(s.tokens.size());
    if (!speculate_ || s.status != SeqStatus::Running || s.stats.generated_tokens == 0 ||
        s.n_computed + 1 != n_tokens)
      continue;
    const int64_t k =
        std::min({s.draft_len.wanted(), s.req.max_tokens - s.stats.generated_tokens - 1,
                  opt_.max_seq_tokens - n_tokens - 1, opt_.step_tokens - 1});
    if (k <= 0) continue;
    asking.push_back(&s);
    asks.push_back({s.id, s.tokens, k});
  }
  if (asks.empty()) return;
  std::vector<std::vector<int32_t>> drafts(asks.size());
  if (draft_) {
    try {
      drafts = draft_->propose(asks);
    } catch (const Error& e) {  // the draft's forward pass failed: decode without drafts
      log::warn("draft model: {}", e.what());
      drafts.assign(asks.size(), {});
    }
  } else {
    for (size_t i = 0; i < asks.size(); ++i)
      drafts[i] = ngram_lookup(asks[i].tokens, opt_.spec.ngram_min, opt_.spec.ngram_max, asks[i].k);
  }
  for (size_t i = 0; i < asks.size(); ++i) {
    Sequence& s = *asking[i];
    const std::vector<int32_t>& d = drafts[i];
    if (d.empty() || static_cast<int64_t>(d.size()) < opt_.spec.draft_min) continue;
    s.verify_row.assign(1, s.tokens.back());
    s.verify_row.insert(s.verify_row.end(), d.begin(), d.end());
    s.n_draft = static_cast<int64_t>(d.size());
  }
}

// A decode row with drafts: samples its logits rows in order while each sampled token is the
// draft the next row was computed after (engine/speculation.h), until the reply ends.
// A rejected draft's K/V is beyond n_computed: overwritten later, never cached.
void Engine::verify(Sequence& s, std::span<const float> logits) {
  const size_t V = static_cast<size_t>(model_.hparams().n_vocab);
  const std::vector<int32_t> drafts(s.verify_row.begin() + 1, s.verify_row.end());
  s.drop_draft();
  s.n_computed += 1;  // the last sampled token
  kv_.computed(kv_view(s));
  s.stats.draft_tokens += static_cast<int64_t>(drafts.size());
  const int64_t accepted_before = s.stats.draft_accepted;
  bool finished = false;
  for (size_t j = 0;; ++j) {
    const int32_t* draft = j < drafts.size() ? &drafts[j] : nullptr;
    finished = sample(s, logits.subspan(j * V, V), draft);
    if (finished || !draft || s.tokens.back() != *draft) break;
    s.n_computed += 1;  // the draft's K/V is the chosen token's
  }
  const int64_t accepted = s.stats.draft_accepted - accepted_before;
  if (!finished) {
    kv_.trim(s.id, s.n_computed + 1);  // room taken for rejected drafts goes back
    if (draft_) draft_->sync(s.id, s.tokens);
  }
  s.draft_len.verified(static_cast<int64_t>(drafts.size()), accepted);
}

}  // namespace hearth
