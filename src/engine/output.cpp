#include "engine/output.h"

#include "util/error.h"

namespace hearth {

SequenceOutput::SequenceOutput(const GenerationRequest& request, const Tokenizer& tok,
                               const VocabAccess& vocab, std::shared_ptr<const TokenTrie> trie)
    : tok_(tok),
      sampler_(*request.sampling, vocab),
      detok_(tok.streaming_detokenizer({.render_special = request.render_special})),
      stops_(request.stop),
      stop_at_eog_(request.stop_at_eog),
      logprobs_(request.sampling->n_probs > 0) {
  if (request.grammar) {
    if (!trie) fail("a grammar needs the vocabulary's token trie");
    if (request.grammar_trigger.empty())
      grammar_.emplace(request.grammar, std::move(trie));
    else
      lazy_ = LazyGrammar{request.grammar, std::move(trie), request.grammar_trigger, ""};
  }
}

TokenOutput SequenceOutput::next(std::span<const float> logits, std::span<const int32_t> tokens) {
  if (generated_ == 0) sampler_.set_history(tokens);
  const SampleResult r = grammar_ ? grammar_->sample(sampler_, logits) : sampler_.sample(logits);
  const int32_t id = r.token;
  sampler_.accept(id);
  if (grammar_)
    grammar_->accept(id);
  else if (lazy_)
    watch_trigger(id);
  ++generated_;
  TokenOutput out;
  const bool eog = stop_at_eog_ && tok_.is_eog(id);
  const std::string emitted = eog ? std::string() : detok_.push(id);
  // The text as the client received it (the end-of-turn token as the template writes it): what
  // a client sends back in the next turn. A token whose bytes are still held back (an
  // incomplete character) has no text yet.
  out.anchor_text = eog ? tok_.token_to_piece(id, true) : emitted;
  EngineEvent& e = out.event;
  e.token = id;
  if (logprobs_) {
    e.logprob = r.logprob;
    e.top_logprobs.reserve(r.top_logprobs.size());
    for (const LogprobEntry& t : r.top_logprobs) e.top_logprobs.push_back({t.token, t.logprob});
  }
  if (!eog) e.text = stops_.push(emitted);
  out.stop = eog || stops_.stopped();
  return out;
}

void SequenceOutput::watch_trigger(int32_t id) {
  LazyGrammar& l = *lazy_;
  if (l.trie->is_end_token(id) || id < 0 || static_cast<size_t>(id) >= l.trie->n_tokens()) return;
  l.tail += l.trie->piece(id);
  const size_t at = l.tail.find(l.trigger);
  if (at == std::string::npos) {
    const size_t keep = l.trigger.size() - 1;  // a trigger begun but not finished
    if (l.tail.size() > keep) l.tail.erase(0, l.tail.size() - keep);
    return;
  }
  grammar_.emplace(std::move(l.grammar), std::move(l.trie));
  const std::string from_trigger = l.tail.substr(at);
  lazy_.reset();
  if (!grammar_->accept_text(from_trigger)) grammar_.reset();
}

const std::string& SequenceOutput::flush() {
  if (!flushed_) tail_ = detok_.flush();  // held-back bytes, as U+FFFD
  flushed_ = true;
  return tail_;
}

EngineEvent SequenceOutput::finished(FinishReason reason, const std::string& error,
                                     const RequestStats& stats) {
  // Text still held back (an incomplete character, a possible stop string's start) goes with
  // the Finished event: a Token event always carries a generated id.
  const std::string held = flush();
  EngineEvent e;
  e.kind = EngineEvent::Kind::Finished;
  const std::string tail = stops_.push(held) + stops_.flush();
  if (reason != FinishReason::Cancelled) e.text = tail;
  e.reason = reason;
  e.error = error;
  e.stats = stats;
  return e;
}

}  // namespace hearth
