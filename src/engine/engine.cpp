#include "engine/engine.h"

#include <algorithm>
#include <cstring>

#include "engine/stop_matcher.h"

#include "model/forward.h"
#include "sampling/sampler.h"
#include "tokenizer/detokenizer.h"
#include "util/error.h"
#include "util/system.h"

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
  int64_t n_computed = 0;       // tokens whose K/V are in `blocks`
  std::vector<int32_t> blocks;
  // The text each token stands for (text prompts; generated pieces), for text anchoring.
  bool has_text = false;
  std::string text;
  std::vector<uint32_t> text_ends;
  size_t n_lead = 0;  // tokens added before the prompt text (BOS)
  bool admitted_once = false;
  bool completing = false;  // finished; its last token still goes through the model for the cache
  Sampler sampler;
  StreamingDetokenizer detok;
  StopMatcher stops;
  RequestStats stats;
  Clock::time_point submitted, first_token;
  bool scheduled_once = false;
  bool cancelled = false;
  int64_t admitted = 0;  // admission order (preemption picks the newest)

  Sequence(GenerationRequest r, const Tokenizer& t, const VocabAccess& v)
      : req(std::move(r)),
        sampler(*req.sampling, v),
        detok(t.streaming_detokenizer()),
        stops(req.stop) {}
  void emit(const EngineEvent& e) const {
    if (req.on_event) req.on_event(e);
  }
};

namespace {

// Room for every running sequence's full context, but never more than half the memory the
// machine has available (weights are mapped, not counted here).
size_t default_kv_bytes(const EngineOptions& o, const ops::KvLayout& l, int64_t n_layer) {
  if (o.kv_bytes > 0) return o.kv_bytes;
  // Whole blocks per running sequence: a budget of exactly max_seq_tokens tokens would round
  // down to fewer blocks than one full sequence needs.
  const size_t blocks_per_seq =
      static_cast<size_t>((o.max_seq_tokens + l.block_tokens - 1) / l.block_tokens);
  const size_t want = 2 * l.block_bytes() * static_cast<size_t>(n_layer) * blocks_per_seq *
                      static_cast<size_t>(std::max(1, o.max_running));
  if (auto avail = available_memory_bytes()) return std::max<size_t>(1, std::min(want, *avail / 2));
  return want;
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
      opt_(options),
      sched_(options.step_tokens, options.max_running, StepCost(model.hparams())),
      fwd_(model, pool),
      kv_(kv_layout_for(model.hparams(), options.kv_type, options.kv_block_tokens),
          model.hparams().n_layer,
          BlockPool::blocks_for_budget(
              kv_layout_for(model.hparams(), options.kv_type, options.kv_block_tokens),
              model.hparams().n_layer,
              default_kv_bytes(
                  options, kv_layout_for(model.hparams(), options.kv_type, options.kv_block_tokens),
                  model.hparams().n_layer))) {
  if (opt_.max_running <= 0 || opt_.max_queued < 0 || opt_.step_tokens <= 0 ||
      opt_.max_seq_tokens <= 0)
    fail("engine: limits must be positive");
  if (opt_.prefix_cache && model.supports_prefix_reuse()) {
    if (!opt_.cache_dir.empty()) {
      const ops::KvLayout& l = kv_.arena().layout;
      const std::string identity =
          fmt::format("{}-{}-b{}-l{}", file_content_hash(model.file().bytes()), type_name(l.type),
                      l.block_tokens, model.hparams().n_layer);
      disk_ = std::make_unique<DiskTier>(opt_.cache_dir, identity, kv_.arena().block_stride(),
                                         opt_.cache_disk_max);
    }
    cache_ = std::make_unique<PrefixCache>(kv_, disk_.get());
  }
  publish_metrics();
}

Engine::~Engine() {
  stop();
  // Sequences still here hold blocks: give them back before the cache flushes and goes.
  for (auto& s : running_) release_to_cache(*s);
  for (auto& s : completing_) release_to_cache(*s);
  cache_.reset();
  disk_.reset();
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
  if (!request.sampling) request.sampling = plain_sampling(request);
  std::unique_ptr<Sequence> s;
  try {
    s = std::make_unique<Sequence>(std::move(request), tok_, vocab_access_);
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
  if (pending_ >= opt_.max_running + opt_.max_queued)
    return {-1, fmt::format("busy: {} requests running or queued", pending_)};
  s->id = next_id_++;
  const int64_t id = s->id;
  inbox_.push_back(std::move(s));
  ++pending_;
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
    for (auto& s : inbox_) waiting_.push_back(std::move(s));
    inbox_.clear();
    cancels.swap(cancels_);
  }
  for (int64_t id : cancels) {
    for (auto& s : running_)
      if (s->id == id) s->cancelled = true;
    for (auto& s : waiting_)
      if (s->id == id) s->cancelled = true;
  }
}

void Engine::finish(Sequence& s, FinishReason reason, const std::string& error) {
  const std::string flushed = s.detok.flush();  // held-back bytes, as U+FFFD
  if (s.has_text && !flushed.empty() && !s.text_ends.empty()) {
    s.text += flushed;
    s.text_ends.back() = static_cast<uint32_t>(s.text.size());
  }
  if (reason == FinishReason::Error) {  // the blocks' contents are not trusted
    for (int32_t b : s.blocks) kv_.release(b);
    s.blocks.clear();
  } else if (cache_ && (reason == FinishReason::Stop || reason == FinishReason::Length) &&
             s.n_computed > 0 && s.n_computed + 1 == static_cast<int64_t>(s.tokens.size())) {
    // The last sampled token has no K/V yet; the next turn of the conversation starts with
    // it, so it runs in the next step (no logits), and then the whole sequence is cached. What
    // is computed is cached now, so a request matched before that step still finds it.
    s.completing = true;
    cache_computed(s, /*keep_blocks=*/true);
  } else {
    release_to_cache(s);
  }
  totals_.prompt_tokens += s.stats.prompt_tokens;
  totals_.cached_tokens += s.stats.cached_tokens;
  totals_.generated_tokens += s.stats.generated_tokens;
  totals_.preemptions += s.stats.preemptions;
  // Text still held back (an incomplete character, a possible stop string's start) goes with
  // the Finished event: a Token event always carries a generated id.
  EngineEvent e;
  e.kind = EngineEvent::Kind::Finished;
  e.request_id = s.id;
  const std::string tail = s.stops.push(flushed) + s.stops.flush();
  if (reason != FinishReason::Cancelled) e.text = tail;
  e.reason = reason;
  e.error = error;
  e.stats = s.stats;
  if (s.stats.generated_tokens > 0)
    e.stats.decode_ms =
        std::chrono::duration<double, std::milli>(Clock::now() - s.first_token).count();
  s.emit(e);
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
  release_to_cache(s);  // readmission finds what is still cached, recomputes the rest
  s.n_computed = 0;
  ++s.stats.preemptions;
}

// Hands the sequence's blocks to the prefix cache (which keeps the computed tokens and frees
// what it does not need), or back to the pool without a cache.
void Engine::release_to_cache(Sequence& s) {
  if (cache_ && s.n_computed > 0) {
    cache_computed(s, /*keep_blocks=*/false);
  } else {
    for (int32_t b : s.blocks) kv_.release(b);
  }
  s.blocks.clear();
}

// Inserts the sequence's computed tokens (and their text) into the prefix cache, which takes
// one reference to each block; with `keep_blocks` the sequence keeps its own references and
// goes on writing (a block it shares with the cache is copied before its next write).
void Engine::cache_computed(Sequence& s, bool keep_blocks) {
  const auto n = static_cast<size_t>(s.n_computed);
  TokenText text;
  if (s.has_text && s.text_ends.size() >= n) text = {s.text, std::span(s.text_ends).first(n)};
  if (keep_blocks)
    for (int32_t b : s.blocks) kv_.retain(b);
  cache_->insert(std::span(s.tokens).first(n), s.blocks, text);
}

std::optional<int32_t> Engine::allocate_block() {
  std::optional<int32_t> b = kv_.allocate();
  while (!b && cache_ && cache_->evict_one()) b = kv_.allocate();
  return b;
}

bool Engine::ensure_blocks(Sequence& s, int64_t n_tokens) {
  const int64_t need = (n_tokens + kv_.block_tokens() - 1) / kv_.block_tokens();
  while (static_cast<int64_t>(s.blocks.size()) < need) {
    auto b = allocate_block();
    if (!b) return false;
    s.blocks.push_back(*b);
  }
  return true;
}

// The block that receives the sequence's next K/V must be its own: a block shared with the
// cache or another sequence is copied first.
bool Engine::make_writable(Sequence& s) {
  const int64_t bt = kv_.block_tokens();
  if (s.n_computed % bt == 0) return true;  // the next token starts a new block
  int32_t& b = s.blocks[static_cast<size_t>(s.n_computed / bt)];
  if (kv_.refcount(b) == 1) return true;
  auto copy = allocate_block();
  if (!copy) return false;
  std::memcpy(kv_.arena().k(*copy, 0), kv_.arena().k(b, 0), kv_.arena().block_stride());
  kv_.release(b);
  b = *copy;
  return true;
}

// On (re)admission: the longest cached prefix becomes the sequence's first blocks. A text
// prompt is matched by text first, so a previous reply that re-tokenizes differently still
// hits; the sequence then keeps the cached tokens and tokenizes only the text after them.
void Engine::attach_cached_prefix(Sequence& s) {
  if (!cache_ || s.n_computed > 0 || !s.blocks.empty()) return;
  const auto n_lead = static_cast<int64_t>(s.n_lead);
  PrefixMatch m;
  if (s.has_text && !s.admitted_once) {
    m = cache_->match_text(std::span(s.tokens).first(s.n_lead), s.text, opt_.max_seq_tokens - 1);
    if (m.n_tokens() > n_lead) {
      // Keep the cached tokens; tokenize only the text after them.
      const std::string_view rest = std::string_view(s.text).substr(m.text_bytes);
      const std::vector<int32_t> tail = encode_text(tok_, rest, s.req.prompt_text, m.text_bytes);
      std::vector<uint32_t> ends = m.ends;  // the cached path's own text
      s.has_text = ends.size() == m.tokens.size() &&
                   piece_ends(tok_, tail, rest, static_cast<uint32_t>(m.text_bytes), ends);
      s.text_ends = s.has_text ? std::move(ends) : std::vector<uint32_t>{};
      s.tokens = m.tokens;
      s.tokens.insert(s.tokens.end(), tail.begin(), tail.end());
      s.stats.prompt_tokens = static_cast<int64_t>(s.tokens.size());
    }
    // No text hit, or all of the prompt cached (one token must still run for logits): match
    // by tokens below.
    if (m.n_tokens() <= n_lead || m.n_tokens() >= static_cast<int64_t>(s.tokens.size())) {
      for (int32_t b : m.blocks) kv_.release(b);
      m = {};
    }
  }
  if (m.blocks.empty()) m = cache_->match(s.tokens, static_cast<int64_t>(s.tokens.size()) - 1);
  s.blocks = std::move(m.blocks);
  s.n_computed = m.n_tokens();
  if (!s.admitted_once) s.stats.cached_tokens = m.n_tokens();
  s.admitted_once = true;
}

// A row of the step's batch, resolved to its sequence.
struct Engine::Row {
  Sequence* s;
  int64_t n;
  StepRow::Kind kind;
};

SeqFacts Engine::facts(const Sequence& s) {
  return {s.id,
          s.admitted,
          s.n_computed,
          static_cast<int64_t>(s.tokens.size()),
          s.stats.generated_tokens > 0,
          s.completing};
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
  admit();
  if (running_.empty() && completing_.empty()) {
    publish_metrics();
    return !waiting_.empty();
  }
  prepare_completing();
  StepPlan plan = plan_step();
  if (!allocate(plan)) return true;
  if (plan.empty()) return true;
  const std::vector<Row> rows = resolve(plan);
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
    if (ensure_blocks(s, s.n_computed + 1) && make_writable(s)) {
      ++it;
    } else {
      release_to_cache(s);
      it = completing_.erase(it);
    }
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
    if (ensure_blocks(s, s.n_computed + plan.rows[i].n) && make_writable(s)) {
      ++i;
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
    for (auto& c : completing_) release_to_cache(*c);
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
    const bool last =
        s->n_computed + r.n == static_cast<int64_t>(s->tokens.size()) && !s->completing;
    batch.push_back(
        {std::span(s->tokens).subspan(static_cast<size_t>(s->n_computed), static_cast<size_t>(r.n)),
         s->n_computed, s->blocks, last ? Logits::Last : Logits::None});
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
    for (auto& c : completing_)
      for (int32_t b : c->blocks) kv_.release(b);
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
      release_to_cache(s);
      continue;
    }
    s.n_computed += rows[i].n;
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

// Samples, emits and appends the sequence's next token; true when that finished it.
bool Engine::sample(Sequence& s, std::span<const float> l) {
  if (s.req.on_logits) s.req.on_logits(l);
  if (s.stats.generated_tokens == 0) s.sampler.set_history(s.tokens);  // the prompt counts
  const SampleResult r = s.sampler.sample(l);
  const int32_t id = r.token;
  s.sampler.accept(id);
  if (s.stats.generated_tokens == 0) {
    s.first_token = Clock::now();
    s.stats.ttft_ms =
        std::chrono::duration<double, std::milli>(s.first_token - s.submitted).count();
  }
  ++s.stats.generated_tokens;
  s.tokens.push_back(id);
  const bool eog = s.req.stop_at_eog && tok_.is_eog(id);
  const std::string emitted = eog ? std::string() : s.detok.push(id);
  if (s.has_text) {
    // The text as the client received it (the end-of-turn token as the template writes it):
    // what a client sends back in the next turn. A token whose bytes are still held back
    // (an incomplete character) has no text yet; no text match ends there.
    s.text += eog ? tok_.token_to_piece(id, true) : emitted;
    s.text_ends.push_back(static_cast<uint32_t>(s.text.size()));
  }
  EngineEvent e;
  e.request_id = s.id;
  e.token = id;
  if (s.req.sampling->n_probs > 0) {
    e.logprob = r.logprob;
    e.top_logprobs.reserve(r.top_logprobs.size());
    for (const LogprobEntry& t : r.top_logprobs) e.top_logprobs.push_back({t.token, t.logprob});
  }
  if (!eog) e.text = s.stops.push(emitted);
  s.emit(e);
  if (eog || s.stops.stopped()) {
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

// Completing replies that cached their last token leave; sequences that finished this step
// leave the running set, the ones still caching their last token for the completing set.
void Engine::retire(const std::vector<Sequence*>& done) {
  std::erase_if(completing_, [](const auto& c) { return c->blocks.empty(); });
  for (auto& r : running_)
    if (r->completing) completing_.push_back(std::move(r));
  std::erase_if(running_, [](const auto& r) { return r == nullptr; });
  std::erase_if(running_, [&](const auto& r) {
    return std::find(done.begin(), done.end(), r.get()) != done.end();
  });
}

void Engine::publish_metrics() {
  EngineMetrics m = totals_;
  m.running = static_cast<int>(running_.size());
  m.queued = static_cast<int>(waiting_.size());
  m.kv_blocks = kv_.n_blocks();
  m.kv_blocks_free = kv_.n_free();
  m.kv_bytes_per_token = kv_bytes_per_token();
  if (cache_) {
    m.cache = cache_->stats();
    m.kv_blocks_cache_only = cache_->reclaimable_blocks();
  }
  if (disk_) m.disk = disk_->stats();
  std::lock_guard lock(mu_);
  metrics_ = m;
}

EngineMetrics Engine::metrics() const {
  std::lock_guard lock(mu_);
  return metrics_;
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
                 !completing_.empty();
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
