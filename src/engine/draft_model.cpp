#include "engine/draft_model.h"

#include <algorithm>

#include "model/forward.h"
#include "util/error.h"

namespace hearth {

namespace {

// The draft's ids must mean what the target's mean: the same tokens with the same text.
void check_same_vocabulary(const Model& draft, const Model& target, const Tokenizer& target_tok) {
  if (draft.hparams().n_vocab != target.hparams().n_vocab)
    fail("the draft model's vocabulary has {} tokens; the model's has {}", draft.hparams().n_vocab,
         target.hparams().n_vocab);
  const Tokenizer tok = Tokenizer::from_gguf(draft.file());
  const Vocab &a = tok.vocab(), &b = target_tok.vocab();
  if (a.n_tokens() != b.n_tokens() || a.bos() != b.bos() || a.eos() != b.eos())
    fail("the draft model's vocabulary is not the model's (size, BOS or EOS differ)");
  for (size_t id = 0; id < a.n_tokens(); ++id)
    if (a.text(static_cast<TokenId>(id)) != b.text(static_cast<TokenId>(id)))
      fail("the draft model's vocabulary is not the model's (token {} differs)", id);
  if (draft.hparams().has_recurrent_layers())
    fail("a model with recurrent layers cannot be a draft model (its state cannot roll back)");
}

KvGeometry draft_geometry(const Model& draft, TensorType kv_type, int64_t block_tokens) {
  return KvGeometry::for_model(draft.hparams(), kv_type, block_tokens);
}

// Room for `tokens` in the main blocks and as many in the window blocks (sliding-window
// layers), whose pool takes its share of the budget first.
size_t draft_budget(const KvGeometry& g, int64_t tokens, int64_t block_tokens) {
  return (g.bytes_per_token() + g.window_bytes_per_token()) *
         static_cast<size_t>(std::max(tokens, block_tokens));
}

KvCacheOptions draft_cache_options(bool prefix_cache) {
  KvCacheOptions o;
  o.prefix_cache = prefix_cache;
  o.max_sequences = 1;  // no recurrent layers: no working state slots needed
  return o;
}

int32_t argmax(std::span<const float> row) {
  return static_cast<int32_t>(std::max_element(row.begin(), row.end()) - row.begin());
}

}  // namespace

// One sequence while the draft proposes for it: its state, the next input, what it proposed.
struct DraftModel::Live {
  int64_t id = 0;
  Seq* seq = nullptr;
  int64_t k = 0;
  std::vector<int32_t> input;
  std::vector<int32_t> out;
  bool catching_up = false;  // computes part of its backlog and proposes nothing this step
  bool done = false;
};

DraftModel::DraftModel(const Model& draft, const Model& target, const Tokenizer& target_tok,
                       ops::ThreadPool& pool, TensorType kv_type, int64_t kv_tokens,
                       int64_t block_tokens, bool prefix_cache)
    : model_((check_same_vocabulary(draft, target, target_tok), draft)),
      fwd_(draft, pool),
      kv_(draft_geometry(draft, kv_type, block_tokens),
          draft_budget(draft_geometry(draft, kv_type, block_tokens), kv_tokens, block_tokens),
          draft_cache_options(prefix_cache && draft.supports_prefix_reuse())) {}

// Attaches the sequence on first sight (its longest cached prefix in the draft's cache) and
// sets its first input: the tokens the draft lacks, up to the sequence's last.
bool DraftModel::start(const DraftAsk& ask, bool follow, Live& live) {
  Seq& s = seqs_[ask.id];
  const auto L = static_cast<int64_t>(ask.tokens.size());
  if (!s.attached) {
    const int64_t n = kv_.caching() ? kv_.attach(ask.id, ask.tokens, L - 1) : 0;
    s.tokens.assign(ask.tokens.begin(), ask.tokens.begin() + n);
    s.attached = true;
  }
  const auto have = static_cast<int64_t>(s.tokens.size());
  if (have >= L) return false;
  live = {ask.id, &s, ask.k, {}, {}, false, false};
  int64_t n = L - have;
  if (n > kCatchUp || follow) {
    n = std::min(n, kCatchUp);
    live.catching_up = true;
  }
  live.input.assign(ask.tokens.begin() + have, ask.tokens.begin() + have + n);
  return true;
}

// Rounds of one forward pass over every sequence still proposing: each round appends its input
// to what the draft has computed and, from the logits, its next draft (the next input).
void DraftModel::run(std::vector<Live>& live) {
  const size_t V = static_cast<size_t>(model_.hparams().n_vocab);
  std::vector<Live*> now;
  std::vector<SeqBatch> batch;
  for (;;) {
    now.clear();
    for (Live& l : live) {
      if (l.done) continue;
      const auto have = static_cast<int64_t>(l.seq->tokens.size());
      if (kv_.allocate_slots(l.id, have, static_cast<int64_t>(l.input.size())))
        now.push_back(&l);
      else
        l.done = true;  // the draft pool is short: what it proposed so far stands
    }
    if (now.empty()) return;
    batch.clear();
    for (const Live* l : now)
      batch.push_back({l->input, static_cast<int64_t>(l->seq->tokens.size()),
                       kv_.block_table(l->id), l->catching_up ? Logits::None : Logits::Last, -1,
                       kv_.window_table(l->id)});
    fwd_.forward(batch, kv_.arena(), logits_);
    size_t row = 0;
    for (Live* l : now) {
      l->seq->tokens.insert(l->seq->tokens.end(), l->input.begin(), l->input.end());
      if (l->catching_up) {
        l->done = true;
        continue;
      }
      const int32_t next = argmax(std::span<const float>(logits_.data() + row++ * V, V));
      l->out.push_back(next);
      l->input.assign(1, next);
      l->done = static_cast<int64_t>(l->out.size()) >= l->k;
    }
  }
}

std::vector<std::vector<int32_t>> DraftModel::propose(std::span<const DraftAsk> asks) {
  std::vector<Live> live;
  std::vector<size_t> slot;  // each live sequence's place among the asks
  for (size_t i = 0; i < asks.size(); ++i) {
    Live l;
    if (asks[i].k <= 0 || !start(asks[i], false, l)) continue;
    live.push_back(std::move(l));
    slot.push_back(i);
  }
  run(live);
  std::vector<std::vector<int32_t>> out(asks.size());
  for (size_t i = 0; i < live.size(); ++i) out[slot[i]] = std::move(live[i].out);
  return out;
}

void DraftModel::follow(std::span<const DraftAsk> asks) {
  std::vector<Live> live;
  for (const DraftAsk& a : asks) {
    Live l;
    if (start(a, true, l)) live.push_back(std::move(l));
  }
  run(live);
}

void DraftModel::sync(int64_t id, std::span<const int32_t> tokens) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  std::vector<int32_t>& have = it->second.tokens;
  const size_t n = std::min(have.size(), tokens.size());
  const auto common = static_cast<size_t>(
      std::mismatch(have.begin(), have.begin() + static_cast<ptrdiff_t>(n), tokens.begin()).first -
      have.begin());
  have.resize(common);
}

void DraftModel::release(int64_t id) {
  auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  const Seq& s = it->second;
  kv_.cache_finished({id, s.tokens, static_cast<int64_t>(s.tokens.size()), {}});
  seqs_.erase(it);
}

void DraftModel::drop(int64_t id) {
  kv_.free(id);
  seqs_.erase(id);
}

}  // namespace hearth
