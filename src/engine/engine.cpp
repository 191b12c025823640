#include "engine/engine.h"

#include <algorithm>

#include "engine/output.h"
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
    case FinishReason::Error:
      return "error";
  }
  return "?";
}

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
  bool admitted_once = false;
  bool completing = false;  // finished; its last token still goes through the model for the cache
  SequenceOutput out;       // sampling, detokenizing, stop strings, events
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
  void drop_draft() {
    n_draft = 0;
    verify_row.clear();
  }
  void emit(EngineEvent e) const {
    e.request_id = id;
    if (req.on_event) req.on_event(e);
  }
};

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
  // Running sequences and the finished replies still caching their last token (at most as
  // many) each hold a recurrent state.
  c.max_sequences = 2 * std::max(1, o.max_running);
  c.snapshot_bytes = o.snapshot_bytes;
  c.snapshot_interval = o.snapshot_interval;
  c.step_tokens = o.step_tokens;
  return c;
}

// Lead tokens the vocabulary adds before a text prompt (BOS), with add_special.
std::vector<int32_t> lead_tokens(const Tokenizer& tok, const TextPrompt& p) {
  if (p.add_special && tok.vocab().add_bos() && tok.bos() >= 0) return {tok.bos()};
  return {};
}

std::vector<int32_t> encode_text(const Tokenizer& tok, std::string_view text, const TextPrompt& p,
                                 size_t offset) {
  if (!p.parse_special) return tok.encode(text, false, false);
  if (p.special_ranges.empty()) return tok.encode(text, false, true);
  ByteRanges shifted;
  for (auto [b, e] : p.special_ranges) {
    if (e <= offset) continue;
    shifted.emplace_back(b > offset ? b - offset : 0, e - offset);
  }
  return tok.encode_with_control_ranges(text, false, shifted);
}

// Per-token text of `tokens[from..]` as the concatenation of their pieces, when that
// reproduces `text` exactly (byte-level BPE does; SPM's added space prefix does not).
bool piece_ends(const Tokenizer& tok, std::span<const int32_t> tokens, std::string_view text,
                uint32_t base, std::vector<uint32_t>& ends) {
  size_t at = 0;
  for (int32_t id : tokens) {
    const std::string piece = tok.token_to_piece(id, true);
    if (text.substr(at, piece.size()) != piece) return false;
    at += piece.size();
    ends.push_back(base + static_cast<uint32_t>(at));
  }
  return at == text.size();
}

// A text prompt's ids and the text each token ends at (when the pieces reproduce the text).
struct TextIds {
  size_t n_lead = 0;
  bool has_text = false;
  std::vector<uint32_t> ends;
};

// Fills r.prompt from r.prompt_text: its own ids when the caller tokenized it already,
// otherwise the text is tokenized here (once).
TextIds tokenize_text(const Tokenizer& tok, GenerationRequest& r) {
  TextPrompt& tp = r.prompt_text;
  TextIds out;
  r.prompt = lead_tokens(tok, tp);
  out.n_lead = r.prompt.size();
  if (!tp.tokens.empty()) {
    r.prompt = std::move(tp.tokens);
    tp.tokens.clear();
  } else {
    const std::vector<int32_t> body = encode_text(tok, tp.text, tp, 0);
    r.prompt.insert(r.prompt.end(), body.begin(), body.end());
  }
  out.ends.assign(out.n_lead, 0);
  out.has_text = r.prompt.size() >= out.n_lead &&
                 piece_ends(tok, std::span(r.prompt).subspan(out.n_lead), tp.text, 0, out.ends);
  return out;
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

std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const TextPrompt& prompt) {
  std::vector<int32_t> ids = lead_tokens(tok, prompt);
  const std::vector<int32_t> body = encode_text(tok, prompt.text, prompt, 0);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

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
  for (auto& s : completing_) kv_.cache_finished(kv_view(*s));
}

SubmitResult Engine::submit(GenerationRequest request) {
  TextIds text_ids;
  if (request.prompt.empty() && !request.prompt_text.text.empty())
    text_ids = tokenize_text(tok_, request);
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
  if (!s->req.warm && pending_ >= opt_.max_running + opt_.max_queued)
    return {-1, fmt::format("busy: {} requests running or queued", pending_)};
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
  return static_cast<int>(running_.size());
}
int Engine::queued() const {
  return static_cast<int>(waiting_.size());
}

void Engine::take_inbox() {
  std::vector<int64_t> cancels;
  {
    std::lock_guard lock(mu_);
    for (auto& s : inbox_) (s->req.warm ? warming_ : waiting_).push_back(std::move(s));
    inbox_.clear();
    cancels.swap(cancels_);
  }
  while (static_cast<int>(warming_.size()) > std::max(0, opt_.max_warm)) {
    finish(*warming_.front(), FinishReason::Cancelled);
    warming_.pop_front();
  }
  for (int64_t id : cancels) {
    for (auto& s : running_)
      if (s->id == id) s->cancelled = true;
    for (auto& s : waiting_)
      if (s->id == id) s->cancelled = true;
    for (auto& s : warming_)
      if (s->id == id) s->cancelled = true;
  }
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
  if (reason == FinishReason::Error) {  // the blocks' contents are not trusted
    kv_.free(s.id);
  } else if (reason == FinishReason::Stop || reason == FinishReason::Length) {
    // A finished turn is cached; its last token may need one more cache-only row.
    s.completing = kv_.finish_turn(kv_view(s));
  } else {
    kv_.cache_finished(kv_view(s));
  }
  if (s.req.warm) {
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

// Whether `s` would match a finished reply further once that reply's last token is cached: its
// prompt starts with all of the reply's tokens, or (text prompts) with all of its text.
bool Engine::continues_completing(const Sequence& s) const {
  for (const auto& c : completing_) {
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
  TextAttach text{s.n_lead, s.text, [&](const PrefixMatch& m) { return adopt_text_match(s, m); }};
  const bool by_text = s.has_text && !s.admitted_once;
  s.n_computed = kv_.attach(s.id, s.tokens, by_text ? &text : nullptr, opt_.max_seq_tokens - 1);
  if (!s.admitted_once) {
    s.stats.cached_tokens = s.n_computed;
    if (!s.req.warm) count_warm_hits(s);
  }
  s.admitted_once = true;
}

// A text match: the sequence keeps the cached tokens and tokenizes only the text after them.
std::span<const int32_t> Engine::adopt_text_match(Sequence& s, const PrefixMatch& m) {
  const std::string_view rest = std::string_view(s.text).substr(m.text_bytes);
  const std::vector<int32_t> tail = encode_text(tok_, rest, s.req.prompt_text, m.text_bytes);
  std::vector<uint32_t> ends = m.ends;  // the cached path's own text
  s.has_text = ends.size() == m.tokens.size() &&
               piece_ends(tok_, tail, rest, static_cast<uint32_t>(m.text_bytes), ends);
  s.text_ends = s.has_text ? std::move(ends) : std::vector<uint32_t>{};
  s.tokens = m.tokens;
  s.tokens.insert(s.tokens.end(), tail.begin(), tail.end());
  s.stats.prompt_tokens = static_cast<int64_t>(s.tokens.size());
  return s.tokens;
}

// A row of the step's batch, resolved to its sequence.
struct Engine::Row {
  Sequence* s;
  int64_t n;
  StepRow::Kind kind;
};

SeqFacts Engine::facts(const Sequence& s) const {
  return {s.id,
          s.admitted,
          s.n_computed,
          static_cast<int64_t>(s.tokens.size()),
          s.stats.generated_tokens > 0,
          s.completing,
          kv_.snapshot_stop(s.id, s.n_computed),
          s.n_draft};
}

std::vector<SeqFacts> Engine::running_facts() const {
  std::vector<SeqFacts> f;
  f.reserve(running_.size());
  for (const auto& s : running_) f.push_back(facts(*s));
  return f;
}

Engine::Sequence* Engine::find(int64_t id) {
  for (auto& s : running_)
    if (s->id == id) return s.get();
  for (auto& s : completing_)
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
  if (running_.empty() && completing_.empty()) {
    publish_metrics();
    return !waiting_.empty() || !warming_.empty();
  }
  prepare_completing();
  propose_drafts();
  StepPlan plan = plan_step();
  if (!allocate(plan)) return true;
  if (plan.empty()) return true;
  const std::vector<Row> rows = resolve(plan);
  draft_follows(rows);
  std::vector<SeqBatch> batch;
  if (!forward(rows, batch)) return true;
  consume(rows, batch);
  publish_metrics();
  return true;
}

void Engine::drop_cancelled() {
  auto drop = [&](auto& set) {
    for (auto it = set.begin(); it != set.end();) {
      if ((*it)->cancelled) {
        finish(**it, FinishReason::Cancelled);
        it = set.erase(it);
      } else {
        ++it;
      }
    }
  };
  drop(running_);
  drop(waiting_);
  drop(warming_);
}

// Next-turn warming runs only when nothing else does: a real request waiting, running or
// completing sets the running warm request aside at this step boundary (what it computed goes
// to the cache; it resumes from there later); else the oldest warm request starts, one at a
// time.
void Engine::schedule_warm() {
  auto warm =
      std::find_if(running_.begin(), running_.end(), [](const auto& s) { return s->req.warm; });
  const bool real_work =
      !waiting_.empty() || !completing_.empty() ||
      std::any_of(running_.begin(), running_.end(), [](const auto& s) { return !s->req.warm; });
  if (real_work) {
    if (warm == running_.end()) return;
    preempt(**warm);
    warming_.push_front(std::move(*warm));
    running_.erase(warm);
    return;
  }
  while (warm == running_.end() && !warming_.empty()) {
    std::unique_ptr<Sequence> s = std::move(warming_.front());
    warming_.pop_front();
    if (admit_warm(std::move(s))) return;
  }
}

// Admits a warm request when the pool's free blocks hold the rest of its prompt (it never
// evicts cached work); otherwise it is dropped, keeping what it had computed.
bool Engine::admit_warm(std::unique_ptr<Sequence> s) {
  s->admitted = admit_counter_++;
  attach_cached_prefix(*s);
  const int64_t n = static_cast<int64_t>(s->tokens.size());
  const int64_t held = (s->n_computed + kv_.block_tokens() - 1) / kv_.block_tokens();
  const int64_t need = (n + kv_.block_tokens() - 1) / kv_.block_tokens() - held + 1;
  if (n >= opt_.max_seq_tokens || need > kv_.pool().n_free()) {
    finish(*s, FinishReason::Cancelled);
    return false;
  }
  running_.push_back(std::move(s));
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

// Admits what the scheduler lets in, each with its cached prefix; one that turns out longer than
// the context fails, and makes room for the next.
void Engine::admit() {
  for (;;) {
    std::vector<WaitingFacts> front;
    const size_t room = static_cast<size_t>(std::max(0, opt_.max_running - running()));
    for (size_t i = 0; i < std::min(room, waiting_.size()); ++i)
      front.push_back({waiting_[i]->id, continues_completing(*waiting_[i])});
    const size_t n = sched_.admit(front, running());
    if (n == 0) return;
    for (size_t i = 0; i < n; ++i) {
      running_.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
      running_.back()->admitted = admit_counter_++;
      attach_cached_prefix(*running_.back());
      if (static_cast<int64_t>(running_.back()->tokens.size()) >= opt_.max_seq_tokens) {
        finish(*running_.back(), FinishReason::ContextFull, "the prompt does not fit the context");
        running_.pop_back();
      }
    }
  }
}

// The block for each completing reply's last token; a reply that finds no room caches what it
// has and leaves.
void Engine::prepare_completing() {
  for (auto it = completing_.begin(); it != completing_.end();) {
    Sequence& s = **it;
    if (kv_.allocate_slots(s.id, s.n_computed, 1)) {
      ++it;
    } else {
      kv_.cache_finished(kv_view(s));
      it = completing_.erase(it);
    }
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
    if (!speculate_ || s.stats.generated_tokens == 0 || s.n_computed + 1 != n_tokens) continue;
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

// --spec draft: the draft model computes this step's prefill chunks too (engine/draft_model.h).
void Engine::draft_follows(const std::vector<Row>& rows) {
  if (!draft_) return;
  std::vector<DraftAsk> asks;
  for (const Row& r : rows)
    if (r.kind == StepRow::Kind::Prefill && !r.s->req.warm)
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

StepPlan Engine::plan_step() {
  std::vector<SeqFacts> completing;
  completing.reserve(completing_.size());
  for (const auto& s : completing_) completing.push_back(facts(*s));
  return sched_.plan(completing, running_facts());
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
    const Shortage shortage = Scheduler::on_shortage(running_facts(), !completing_.empty());
    if (shortage.action == Shortage::Action::ContextFull) {
      finish(*find(shortage.id), FinishReason::ContextFull,
             "the KV pool cannot hold this sequence");
      std::erase_if(running_, [&](const auto& r) { return r->id == shortage.id; });
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
    for (auto& c : completing_) kv_.cache_finished(kv_view(*c));
    completing_.clear();
    return;
  }
  auto victim = std::find_if(running_.begin(), running_.end(),
                             [&](const auto& r) { return r->id == shortage.id; });
  preempt(**victim);
  plan.drop(shortage.id);
  waiting_.push_front(std::move(*victim));
  running_.erase(victim);
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
                        !s->completing && !s->req.warm;
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
    for (const Row& r : rows) r.s->cancelled = true;  // finished with an error below
    for (auto& c : completing_) kv_.free(c->id);
    completing_.clear();
    for (auto it = running_.begin(); it != running_.end();) {
      if ((*it)->cancelled) {
        finish(**it, FinishReason::Error, e.what());
        it = running_.erase(it);
      } else {
        ++it;
      }
    }
    return false;
  }
  return true;
}

// After the forward pass: the computed tokens count, and the rows with logits sample.
void Engine::consume(const std::vector<Row>& rows, const std::vector<SeqBatch>& batch) {
  const size_t V = static_cast<size_t>(model_.hparams().n_vocab);
  size_t row = 0;
  std::vector<Sequence*> done;
  for (size_t i = 0; i < rows.size(); ++i) {
    Sequence& s = *rows[i].s;
    if (s.completing) {
      s.n_computed += 1;
      kv_.cache_finished(kv_view(s));
      continue;
    }
    if (s.n_draft > 0) {
      const auto n = static_cast<size_t>(rows[i].n);
      if (verify(s, std::span(logits_.data() + row * V, n * V))) done.push_back(&s);
      row += n;
      continue;
    }
    s.n_computed += rows[i].n;
    kv_.computed(kv_view(s));  // recurrent layers: a snapshot where one is wanted
    if (s.req.warm) {
      totals_.warm_tokens += rows[i].n;
      if (s.n_computed == static_cast<int64_t>(s.tokens.size())) {
        finish(s, FinishReason::Length);
        done.push_back(&s);
      }
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
      done.push_back(&s);
    } else if (sample(s, l)) {
      done.push_back(&s);
    }
  }
  retire(done);
}

// Samples, emits and appends the sequence's next token; true when that finished it. `draft`: the
// token drafted there (counted as accepted when sampled).
bool Engine::sample(Sequence& s, std::span<const float> l, const int32_t* draft) {
  if (s.req.on_logits) s.req.on_logits(l);
  TokenOutput t;
  try {
    t = s.out.next(l, s.tokens);
  } catch (const Error& e) {  // a grammar that cannot go on: the reply ends, saying why
    finish(s, FinishReason::Error, e.what());
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

// A decode row with drafts: samples its logits rows in order while each sampled token is the
// draft the next row was computed after (engine/speculation.h); true when the reply finished.
// A rejected draft's K/V is beyond n_computed: overwritten later, never cached.
bool Engine::verify(Sequence& s, std::span<const float> logits) {
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
  return finished;
}

// Completing replies that cached their last token leave; sequences that finished this step
// leave the running set, the ones still caching their last token for the completing set.
void Engine::retire(const std::vector<Sequence*>& done) {
  std::erase_if(completing_, [&](const auto& c) { return !kv_.holds(c->id); });
  for (auto& r : running_)
    if (r->completing) completing_.push_back(std::move(r));
  std::erase_if(running_, [](const auto& r) { return r == nullptr; });
  std::erase_if(running_, [&](const auto& r) {
    return std::find(done.begin(), done.end(), r.get()) != done.end();
  });
}

void Engine::publish_metrics() {
  EngineMetrics m = totals_;
  m.running = static_cast<int>(
      std::count_if(running_.begin(), running_.end(), [](const auto& s) { return !s->req.warm; }));
  m.queued = static_cast<int>(waiting_.size());
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
  std::lock_guard lock(mu_);
  metrics_ = m;
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
                 warm_pending_ > 0 || !completing_.empty();
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
