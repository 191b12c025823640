#include "engine/engine.h"

#include <algorithm>

#include "engine/output.h"
#include "engine/sequence.h"
#include "model/forward.h"
#include "util/error.h"
#include "util/log.h"

namespace hearth {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
    case FinishReason::Cancelled:
      return "cancelled";
    case FinishReason::ContextFull:
      return "context_full";
    case FinishReason::PoolFull:
      return "pool_full";
    case FinishReason::GrammarFailed:
      return "grammar_failed";
    case FinishReason::Error:
      return "error";
  }
  return "?";
}

namespace {

KvGeometry kv_geometry(const Model& model, const EngineOptions& o) {
  return KvGeometry::for_model(model.hparams(), o.kv_type, o.kv_block_tokens);
}

// The asked budget, or room for every running sequence's full context (kv/kv_manager.h).
size_t kv_budget(const Model& model, const EngineOptions& o) {
  if (o.kv_bytes > 0) return o.kv_bytes;
  return kv_geometry(model, o).default_budget(o.max_seq_tokens, o.max_running, o.step_tokens);
}

KvCacheOptions kv_cache_options(const Model& model, const EngineOptions& o) {
  KvCacheOptions c;
  c.prefix_cache = o.prefix_cache && model.supports_prefix_reuse();
  c.dir = o.cache_dir;
  if (c.prefix_cache && !c.dir.empty()) c.model_hash = file_content_hash(model.file().bytes());
  c.disk_max = o.cache_disk_max;
  c.write_through = o.cache_shared;
  // Running sequences and the finished replies still caching their last token (at most as
  // many) each hold a recurrent state.
  c.max_sequences = 2 * std::max(1, o.max_running);
  c.snapshot_bytes = o.snapshot_bytes;
  c.snapshot_interval = o.snapshot_interval;
  c.step_tokens = o.step_tokens;
  return c;
}

// The plain chain of requests without `sampling`: softmax(logits / T), greedy at T = 0.
SamplerParams plain_sampling(const GenerationRequest& r) {
  SamplerParams p;
  p.temperature = r.temperature;
  p.seed = r.seed;
  p.top_k = 0;
  p.top_p = 1.0f;
  p.min_p = 0.0f;
  p.n_probs = r.n_probs;
  return p;
}

}  // namespace

Engine::Engine(const Model& model, const Tokenizer& tokenizer, EngineOptions options,
               ops::ThreadPool& pool)
    : model_(model),
      tok_(tokenizer),
      vocab_access_{static_cast<int32_t>(model.hparams().n_vocab),
                    [this](int32_t id) { return tok_.token_to_piece(id, true); },
                    [this](std::string_view text) { return tok_.encode(text, false, false); }},
      grammar_trie_(tokenizer, model.hparams().n_vocab),
      opt_(options),
      sched_(options.step_tokens, options.max_running, StepCost(model.hparams())),
      fwd_(model, pool),
      kv_(kv_geometry(model, options), kv_budget(model, options),
          kv_cache_options(model, options)) {
  if (opt_.max_running <= 0 || opt_.max_queued < 0 || opt_.step_tokens <= 0 ||
      opt_.max_seq_tokens <= 0)
    fail("engine: limits must be positive");
  if (opt_.spec.draft_max < 0 || opt_.spec.draft_min < 0 || opt_.spec.ngram_min < 1 ||
      opt_.spec.ngram_max < opt_.spec.ngram_min)
    fail("engine: draft lengths must be >= 0 and the n-gram range not empty");
  speculate_ = opt_.spec.mode != SpecMode::Off && opt_.spec.draft_max > 0 && !kv_.recurrent();
  if (speculate_ && opt_.spec.mode == SpecMode::Draft) {
    if (!opt_.draft_model) fail("engine: speculative decoding with a draft model needs one");
    draft_ = std::make_unique<DraftModel>(*opt_.draft_model, model, tokenizer, pool, opt_.kv_type,
                                          static_cast<int64_t>(kv_.n_blocks()) * kv_.block_tokens(),
                                          kv_.block_tokens(), kv_.caching());
  }
  publish_metrics();
}

Engine::~Engine() {
  stop();
  // Sequences still here hold blocks: give them back before the cache flushes and goes.
  for (auto& s : running_) kv_.cache_finished(kv_view(*s));
}

SubmitResult Engine::submit(GenerationRequest request) {
  PromptTokens text_ids;
  if (request.prompt.empty() && !request.prompt_text.text.empty()) {
    text_ids = tokenize_prompt_with_ends(tok_, request.prompt_text);
    request.prompt = std::move(text_ids.ids);
  }
  if (request.prompt.empty()) return {-1, "the prompt has no tokens"};
  const auto n_prompt = static_cast<int64_t>(request.prompt.size());
  if (request.context_limit > 0) {
    if (n_prompt + request.context_reserve > request.context_limit)
      return {-1,
              fmt::format("the prompt has {} tokens; with {} more it exceeds the context of {}",
                          n_prompt, request.context_reserve, request.context_limit),
              n_prompt, true};
    if (request.max_tokens < 0) request.max_tokens = request.context_limit - n_prompt;
  }
  if (request.max_tokens < 0) return {-1, "max_tokens must be >= 0"};
  for (int32_t id : request.prompt)
    if (id < 0 || id >= model_.hparams().n_vocab)
      return {-1, fmt::format("token id {} is out of range (vocabulary {})", id,
                              model_.hparams().n_vocab)};
  if (static_cast<int64_t>(request.prompt.size()) >= opt_.max_seq_tokens)
    return {-1, fmt::format("the prompt has {} tokens; the context per sequence is {}",
                            request.prompt.size(), opt_.max_seq_tokens)};
  const int64_t need_blocks =
      (static_cast<int64_t>(request.prompt.size()) + 1 + kv_.block_tokens() - 1) /
      kv_.block_tokens();
  if (need_blocks > kv_.n_blocks())
    return {-1, fmt::format("the prompt needs {} KV blocks; the pool has {}", need_blocks,
                            kv_.n_blocks())};
  if (request.warm && !kv_.caching()) return {-1, "warming needs the prefix cache"};
  if (request.warm) request.max_tokens = 0;
  if (!request.sampling) request.sampling = plain_sampling(request);
  std::unique_ptr<Sequence> s;
  try {
    std::shared_ptr<const TokenTrie> trie = request.grammar ? grammar_trie_.get() : nullptr;
    if (trie && request.grammar_trigger.empty()) {  // a lazy grammar is dropped if it fails
      if (std::string why = GrammarConstraint::start_problem(request.grammar, trie); !why.empty()) {
        SubmitResult refused{-1, std::move(why), n_prompt};
        refused.grammar_refused = true;
        return refused;
      }
    }
    s = std::make_unique<Sequence>(std::move(request), tok_, vocab_access_, std::move(trie),
                                   opt_.spec.draft_max);
  } catch (const Error& e) {
    return {-1, e.what()};
  }
  s->tokens = s->req.prompt;
  s->has_text = text_ids.has_text;
  s->n_lead = text_ids.n_lead;
  if (s->has_text) {
    s->text = s->req.prompt_text.text;
    s->text_ends = std::move(text_ids.ends);
  }
  s->stats.prompt_tokens = static_cast<int64_t>(s->tokens.size());
  s->submitted = Clock::now();
  std::lock_guard lock(mu_);
  if (!s->req.warm && pending_ >= opt_.max_running + opt_.max_queued) {
    SubmitResult busy{-1, fmt::format("busy: {} requests running or queued", pending_)};
    busy.busy = true;
    return busy;
  }
  s->id = next_id_++;
  const int64_t id = s->id;
  ++(s->req.warm ? warm_pending_ : pending_);
  inbox_.push_back(std::move(s));
  cv_.notify_one();
  return {id, "", n_prompt};
}

void Engine::cancel(int64_t id) {
  std::lock_guard lock(mu_);
  cancels_.push_back(id);
  cv_.notify_one();
}

int Engine::running() const {
  std::lock_guard lock(mu_);
  return published_running_;
}
int Engine::queued() const {
  std::lock_guard lock(mu_);
  return metrics_.queued;
}

// The engine thread's own count: sequences prefilling or decoding, warm ones included.
int Engine::n_running() const {
  return static_cast<int>(std::count_if(running_.begin(), running_.end(), [](const auto& s) {
    return s->status == SeqStatus::Running;
  }));
}

// Requests of `status` (Waiting or Running), at background priority or not.
int Engine::count(SeqStatus status, bool background) const {
  auto is = [&](const auto& s) { return s->status == status && s->background() == background; };
  if (status == SeqStatus::Waiting)
    return static_cast<int>(std::count_if(waiting_.begin(), waiting_.end(), is));
  return static_cast<int>(std::count_if(running_.begin(), running_.end(), is));
}

bool Engine::any_completing() const {
  return std::any_of(running_.begin(), running_.end(),
                     [](const auto& s) { return s->status == SeqStatus::Completing; });
}

void Engine::take_inbox() {
  std::vector<int64_t> cancels;
  {
    std::lock_guard lock(mu_);
    for (auto& s : inbox_) waiting_.push_back(std::move(s));
    inbox_.clear();
    cancels.swap(cancels_);
  }
  // Too many warm requests waiting: the oldest go (a newer one is a later turn's).
  for (int extra = count(SeqStatus::Waiting, true) - std::max(0, opt_.max_warm); extra > 0; --extra)
    finish(**std::find_if(waiting_.begin(), waiting_.end(),
                          [](const auto& s) { return s->live() && s->background(); }),
           FinishReason::Cancelled);
  for (int64_t id : cancels) {
    for (auto& s : running_)
      if (s->id == id) s->cancelled = true;
    for (auto& s : waiting_)
      if (s->id == id) s->cancelled = true;
  }
  sweep();
}

void Engine::finish(Sequence& s, FinishReason reason, const std::string& error) {
  const std::string flushed = s.out.flush();  // held-back bytes, as U+FFFD
  if (s.has_text && !flushed.empty() && !s.text_ends.empty()) {
    s.text += flushed;
    s.text_ends.back() = static_cast<uint32_t>(s.text.size());
  }
  if (draft_) {  // the draft's K/V of the sequence: cached as far as it matches, or dropped
    draft_->sync(s.id, s.tokens);
    reason == FinishReason::Error ? draft_->drop(s.id) : draft_->release(s.id);
  }
  const bool turn_end = reason == FinishReason::Stop || reason == FinishReason::Length;
  release(s, reason == FinishReason::Error ? KvEnd::Discard
             : turn_end                    ? KvEnd::Turn
                                           : KvEnd::Cache);
  if (s.background()) {
    record_warm(s);
    s.emit(s.out.finished(reason, error, s.stats));
    std::lock_guard lock(mu_);
    --warm_pending_;
    return;
  }
  totals_.prompt_tokens += s.stats.prompt_tokens;
  totals_.cached_tokens += s.stats.cached_tokens;
  totals_.generated_tokens += s.stats.generated_tokens;
  totals_.preemptions += s.stats.preemptions;
  totals_.draft_tokens += s.stats.draft_tokens;
  totals_.draft_accepted += s.stats.draft_accepted;
  RequestStats stats = s.stats;
  if (s.stats.generated_tokens > 0)
    stats.decode_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - s.first_token).count();
  s.emit(s.out.finished(reason, error, stats));
  std::lock_guard lock(mu_);
  --pending_;
}

void Engine::release(Sequence& s, KvEnd how) {
  switch (how) {
    case KvEnd::Turn:
      if (kv_.finish_turn(kv_view(s))) {
        s.status = SeqStatus::Completing;
        return;
      }
      break;
    case KvEnd::Cache:
      kv_.cache_finished(kv_view(s));
      break;
    case KvEnd::Discard:
      kv_.free(s.id);
      break;
  }
  s.status = SeqStatus::Finished;
}

// Takes Finished sequences out of their queues (the only place a sequence is destroyed, but
// for the engine's own destruction).
void Engine::sweep() {
  auto finished = [](const auto& s) { return s->status == SeqStatus::Finished; };
  std::erase_if(waiting_, finished);
  std::erase_if(running_, finished);
}

// Whether `s` would match a finished reply further once that reply's last token is cached: its
// prompt starts with all of the reply's tokens, or (text prompts) with all of its text.
bool Engine::continues_completing(const Sequence& s) const {
  for (const auto& c : running_) {
    if (c->status != SeqStatus::Completing) continue;
    if (s.tokens.size() >= c->tokens.size() &&
        std::equal(c->tokens.begin(), c->tokens.end(), s.tokens.begin()))
      return true;
    if (s.has_text && c->has_text && s.text.starts_with(c->text)) return true;
  }
  return false;
}

void Engine::preempt(Sequence& s) {
  kv_.preempt(kv_view(s));  // readmission finds what is still cached, recomputes the rest
  if (draft_) {
    draft_->sync(s.id, s.tokens);
    draft_->release(s.id);
  }
  s.n_computed = 0;
  ++s.stats.preemptions;
  requeue(s);
}

// A running sequence goes back to the front of the waiting queue (first to be admitted again).
void Engine::requeue(Sequence& s) {
  auto it =
      std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == &s; });
  s.status = SeqStatus::Waiting;
  waiting_.push_front(std::move(*it));
  running_.erase(it);
}

SeqView Engine::kv_view(const Sequence& s) {
  SeqView v{s.id, s.tokens, s.n_computed, {}};
  if (s.has_text) v.text = {s.text, s.text_ends};
  return v;
}

// On (re)admission: the longest cached prefix becomes the sequence's first blocks (by text
// first for a text prompt's first admission: kv/kv_manager.h).
void Engine::attach_cached_prefix(Sequence& s) {
  if (!kv_.caching() || s.n_computed > 0 || kv_.holds(s.id)) return;
  if (s.has_text && !s.admitted_once) {
    const PromptSplits splits = prompt_splits(s);
    const TextHit hit = kv_.match_text(s.id, std::span(s.tokens).first(s.n_lead), s.text,
                                       opt_.max_seq_tokens - 1, &splits);
    if (hit.n_tokens() > 0) adopt_text_hit(s, hit);
  }
  s.n_computed = kv_.attach(s.id, s.tokens, opt_.max_seq_tokens - 1);
  if (!s.admitted_once) {
    s.stats.cached_tokens = s.n_computed;
    if (!s.req.warm) count_warm_hits(s);
  }
  s.admitted_once = true;
}

// How the prompt's own tokenization (the sequence's tokens before any match) splits its text,
// for the text match to respect (kv/prefix_cache.h, PromptSplits).
PromptSplits Engine::prompt_splits(const Sequence& s) const {
  PromptSplits out;
  const Vocab& vocab = tok_.vocab();
  // Control tokens only: content can never produce them (special text counts only inside a
  // template's own ranges), while added (USER_DEFINED) tokens such as <tool_call> are split
  // out of any text, so a reply that spelled one in plain pieces is the same text either way
  // and keeps the tokens it was computed with.
  out.is_special = [&vocab](int32_t id) {
    return vocab.valid_id(id) && (vocab.attr(id) & (kAttrControl | kAttrUnknown)) != 0;
  };
  for (size_t i = s.n_lead; i < s.tokens.size() && i < s.text_ends.size(); ++i) {
    if (out.is_special(s.tokens[i]))
      out.specials.emplace_back(i > 0 ? s.text_ends[i - 1] : 0, s.text_ends[i]);
    out.token_ends.push_back(s.text_ends[i]);
  }
  return out;
}

// A text hit: the sequence keeps the cached tokens, then the prompt's own tokens after the
// text they cover (the hit ends where one of those ends: PromptSplits). On the first
// admission, when this runs, s.tokens and s.text_ends are still the prompt's cold tokenization.
void Engine::adopt_text_hit(Sequence& s, const TextHit& hit) {
  const auto cold_end = s.text_ends.begin() + static_cast<ptrdiff_t>(s.n_lead);
  const auto after = std::upper_bound(cold_end, s.text_ends.end(), hit.text_bytes);
  const auto first = static_cast<size_t>(after - s.text_ends.begin());  // the first cold token left
  std::vector<int32_t> tokens = hit.tokens;
  tokens.insert(tokens.end(), s.tokens.begin() + static_cast<ptrdiff_t>(first), s.tokens.end());
  std::vector<uint32_t> ends = hit.ends;  // the cached path's own text, then the cold tokens'
  s.has_text = ends.size() == hit.tokens.size();
  if (s.has_text) ends.insert(ends.end(), after, s.text_ends.end());
  s.text_ends = s.has_text ? std::move(ends) : std::vector<uint32_t>{};
  s.tokens = std::move(tokens);
  s.stats.prompt_tokens = static_cast<int64_t>(s.tokens.size());
}

SeqFacts Engine::facts(const Sequence& s) const {
  return {s.id,
          s.admitted,
          s.n_computed,
          static_cast<int64_t>(s.tokens.size()),
          s.stats.generated_tokens > 0,
          s.status == SeqStatus::Completing,
          kv_.snapshot_stop(s.id, s.n_computed),
          s.n_draft};
}

// The facts of the running queue's sequences of `status` (Running or Completing), in its order.
std::vector<SeqFacts> Engine::facts_of(SeqStatus status) const {
  std::vector<SeqFacts> f;
  f.reserve(running_.size());
  for (const auto& s : running_)
    if (s->status == status) f.push_back(facts(*s));
  return f;
}

Engine::Sequence* Engine::find(int64_t id) {
  for (auto& s : running_)
    if (s->id == id) return s.get();
  return nullptr;
}

bool Engine::step() {
  take_inbox();
  // Cancellations and admissions happen at the step boundary.
  drop_cancelled();
  schedule_warm();  // a warm request gives way before the real ones are admitted...
  admit();
  schedule_warm();  // ...and one starts when there are none
  if (running_.empty()) {
    publish_metrics();
    return !waiting_.empty();
  }
  run_batch();
  publish_metrics();
  return true;
}

// The step's batch: planned, given blocks, computed and consumed (it may end early: a sequence
// that can never fit, nothing to compute, a failed forward pass).
void Engine::run_batch() {
  prepare_completing();
  propose_drafts();
  StepPlan plan = plan_step();
  if (!allocate(plan) || plan.empty()) return;
  const std::vector<Row> rows = resolve(plan);
  draft_follows(rows);
  std::vector<SeqBatch> batch;
  if (!forward(rows, batch)) return;
  consume(rows, batch);
}

// A completing reply was already answered: a cancel of it changes nothing.
void Engine::drop_cancelled() {
  for (auto& s : running_)
    if (s->cancelled && s->live()) finish(*s, FinishReason::Cancelled);
  for (auto& s : waiting_)
    if (s->cancelled && s->live()) finish(*s, FinishReason::Cancelled);
  sweep();
}

// Admits what the scheduler lets in, each with its cached prefix; one that turns out longer than
// the context fails, and makes room for the next.
// Background requests are passed over (schedule_warm() runs them).
void Engine::admit() {
  for (;;) {
    std::vector<WaitingFacts> front;
    const size_t room = static_cast<size_t>(std::max(0, opt_.max_running - n_running()));
    for (const auto& w : waiting_)
      if (front.size() < room && w->live() && !w->background())
        front.push_back({w->id, continues_completing(*w)});
    const size_t n = sched_.admit(front, n_running());
    if (n == 0) return;
    for (size_t i = 0; i < n; ++i) {
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [&](const auto& w) { return w->id == front[i].id; });
      running_.push_back(std::move(*it));
      waiting_.erase(it);
      Sequence& s = *running_.back();
      s.status = SeqStatus::Running;
      s.admitted = admit_counter_++;
      attach_cached_prefix(s);
      if (static_cast<int64_t>(s.tokens.size()) >= opt_.max_seq_tokens)
        finish(s, FinishReason::ContextFull, "the prompt does not fit the context");
    }
    sweep();
  }
}

// The block for each completing reply's last token; a reply that finds no room caches what it
// has and leaves.
void Engine::prepare_completing() {
  for (auto& s : running_)
    if (s->status == SeqStatus::Completing && !kv_.allocate_slots(s->id, s->n_computed, 1))
      release(*s, KvEnd::Cache);
  sweep();
}

StepPlan Engine::plan_step() {
  return sched_.plan(facts_of(SeqStatus::Completing), facts_of(SeqStatus::Running));
}

// Blocks for the plan, in its order; when the pool runs out, whoever the scheduler names gives
// way and the plan is tried again from the start. False when the step ends here (a sequence
// failed: it can never fit).
bool Engine::allocate(StepPlan& plan) {
  for (size_t i = 0; i < plan.rows.size();) {
    Sequence& s = *find(plan.rows[i].id);
    if (kv_.allocate_slots(s.id, s.n_computed, plan.rows[i].n)) {
      ++i;
      continue;
    }
    if (s.n_draft > 0) {  // drafts are the first to go: the row decodes its one token
      s.drop_draft();
      plan.rows[i].n = 1;
      kv_.trim(s.id, s.n_computed + 1);  // what the failed attempt took for them
      continue;
    }
    const Shortage shortage =
        Scheduler::on_shortage(facts_of(SeqStatus::Running), any_completing());
    if (shortage.action == Shortage::Action::ContextFull) {
      Sequence& s = *find(shortage.id);
      finish(s, FinishReason::PoolFull,
             fmt::format("the KV pool holds {} tokens and this sequence needs more ({} so far)",
                         kv_.n_blocks() * kv_.block_tokens(), s.tokens.size()));
      sweep();
      return false;
    }
    give_way(shortage, plan);
    i = 0;
  }
  return true;
}

void Engine::give_way(const Shortage& shortage, StepPlan& plan) {
  if (shortage.action == Shortage::Action::ReleaseCompleting) {
    plan.drop_completing();
    for (auto& s : running_)
      if (s->status == SeqStatus::Completing) release(*s, KvEnd::Cache);
    sweep();
    return;
  }
  preempt(*find(shortage.id));
  plan.drop(shortage.id);
}

std::vector<Engine::Row> Engine::resolve(const StepPlan& plan) {
  std::vector<Row> rows;
  rows.reserve(plan.rows.size());
  for (const StepRow& r : plan.rows) rows.push_back({find(r.id), r.n, r.kind});
  return rows;
}

// Runs the batch; false when the forward pass failed (its sequences then finish with the error).
bool Engine::forward(const std::vector<Row>& rows, std::vector<SeqBatch>& batch) {
  batch.reserve(rows.size());
  for (const Row& r : rows) {
    Sequence* s = r.s;
    if (s->n_draft > 0) {  // the last token and its drafts, each row's logits for verify()
      batch.push_back({s->verify_row, s->n_computed, kv_.block_table(s->id), Logits::All,
                       kv_.state_slot(s->id), kv_.window_table(s->id)});
    } else {
      const bool last = s->n_computed + r.n == static_cast<int64_t>(s->tokens.size()) &&
                        s->status == SeqStatus::Running && !s->background();
      batch.push_back({std::span(s->tokens).subspan(static_cast<size_t>(s->n_computed),
                                                    static_cast<size_t>(r.n)),
                       s->n_computed, kv_.block_table(s->id), last ? Logits::Last : Logits::None,
                       kv_.state_slot(s->id), kv_.window_table(s->id)});
    }
    if (!s->scheduled_once) {
      s->scheduled_once = true;
      s->stats.queue_ms =
          std::chrono::duration<double, std::milli>(Clock::now() - s->submitted).count();
    }
  }
  try {
    fwd_.forward(batch, kv_.arena(), logits_);
  } catch (const Error& e) {
    fail_step(rows, e.what());
    return false;
  }
  return true;
}

// A failed forward pass: its rows' sequences finish with the error and every completing reply
// is discarded (what the pass wrote into their blocks is not trusted).
void Engine::fail_step(const std::vector<Row>& rows, const std::string& error) {
  for (auto& s : running_)
    if (s->status == SeqStatus::Completing) release(*s, KvEnd::Discard);
  for (const Row& r : rows)
    if (r.s->status == SeqStatus::Running) finish(*r.s, FinishReason::Error, error);
  sweep();
}

// After the forward pass: the computed tokens count, and the rows with logits sample.
void Engine::consume(const std::vector<Row>& rows, const std::vector<SeqBatch>& batch) {
  const size_t V = static_cast<size_t>(model_.hparams().n_vocab);
  size_t row = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    Sequence& s = *rows[i].s;
    if (s.status == SeqStatus::Completing) {  // its last token is cached now
      s.n_computed += 1;
      release(s, KvEnd::Cache);
      continue;
    }
    if (s.n_draft > 0) {
      const auto n = static_cast<size_t>(rows[i].n);
      verify(s, std::span(logits_.data() + row * V, n * V));
      row += n;
      continue;
    }
    s.n_computed += rows[i].n;
    kv_.computed(kv_view(s));  // recurrent layers: a snapshot where one is wanted
    if (s.background()) {
      totals_.warm_tokens += rows[i].n;
      if (s.n_computed == static_cast<int64_t>(s.tokens.size())) finish(s, FinishReason::Length);
      continue;
    }
    if (rows[i].kind != StepRow::Kind::Decode) {
      s.stats.prefilled_tokens += rows[i].n;
      totals_.prefilled_tokens += rows[i].n;  // as computed: metrics follow a long prefill
    }
    if (batch[i].logits == Logits::None) continue;
    const std::span<const float> l(logits_.data() + row * V, V);
    ++row;
    if (s.req.max_tokens == 0) {
      finish(s, FinishReason::Length);
    } else {
      sample(s, l);
    }
  }
  sweep();
}

// Samples, emits and appends the sequence's next token; true when that finished it. `draft`: the
// token drafted there (counted as accepted when sampled).
bool Engine::sample(Sequence& s, std::span<const float> l, const int32_t* draft) {
  if (s.req.on_logits) s.req.on_logits(l);
  TokenOutput t;
  try {
    t = s.out.next(l, s.tokens);
  } catch (const Error& e) {  // a grammar that cannot go on: the reply ends, saying why
    finish(s, FinishReason::GrammarFailed, e.what());
    return true;
  }
  if (s.stats.generated_tokens == 0) {
    s.first_token = Clock::now();
    s.stats.ttft_ms =
        std::chrono::duration<double, std::milli>(s.first_token - s.submitted).count();
  }
  ++s.stats.generated_tokens;
  if (draft && *draft == t.event.token) ++s.stats.draft_accepted;
  s.tokens.push_back(t.event.token);
  if (s.has_text) {
    // What the token stands for in the conversation (a token whose bytes are still held back
    // has no text yet; no text match ends there).
    s.text += t.anchor_text;
    s.text_ends.push_back(static_cast<uint32_t>(s.text.size()));
  }
  s.emit(std::move(t.event));
  if (t.stop) {
    finish(s, FinishReason::Stop);
  } else if (s.stats.generated_tokens >= s.req.max_tokens) {
    finish(s, FinishReason::Length);
  } else if (static_cast<int64_t>(s.tokens.size()) >= opt_.max_seq_tokens) {
    finish(s, FinishReason::ContextFull);
  } else {
    return false;
  }
  return true;
}

void Engine::publish_metrics() {
  EngineMetrics m = totals_;
  m.running = count(SeqStatus::Running, false);
  m.queued = count(SeqStatus::Waiting, false);
  m.kv_blocks = kv_.n_blocks();
  m.kv_blocks_free = kv_.pool().n_free();
  m.kv_bytes_per_token = kv_bytes_per_token();
  m.state_slot_bytes = kv_.states().slot_bytes();
  if (const BlockPool* w = kv_.window_pool()) {
    m.kv_window_blocks = w->n_blocks();
    m.kv_window_blocks_free = w->n_free();
    m.kv_window_bytes_per_token = kv_.window_bytes_per_token();
  }
  if (auto cache = kv_.cache_stats()) {
    m.cache = *cache;
    m.kv_blocks_cache_only = kv_.cache_only_blocks();
    m.kv_window_blocks_cache_only = kv_.cache_only_window_blocks();
  }
  m.disk = kv_.disk_stats();
  const int running = n_running();
  std::lock_guard lock(mu_);
  metrics_ = m;
  published_running_ = running;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard lock(mu_);
  EngineMetrics m = metrics_;
  m.warming = warm_pending_;  // from submit on, not from the next step
  return m;
}

void Engine::run_until_idle() {
  while (step()) {
  }
}

void Engine::start() {
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    for (;;) {
      {
        std::unique_lock lock(mu_);
        // Finished replies still caching their last token are work too: the next request of
        // the conversation must find them in the cache, however long the client pauses.
        cv_.wait(lock, [&] {
          return stop_ || !inbox_.empty() || !cancels_.empty() || pending_ > 0 ||
                 warm_pending_ > 0 || any_completing();
        });
        if (stop_) return;
      }
      if (!step()) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !inbox_.empty() || !cancels_.empty(); });
        if (stop_) return;
      }
    }
  });
}

void Engine::stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace hearth
