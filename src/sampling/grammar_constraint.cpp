#include "sampling/grammar_constraint.h"

#include <limits>

#include "sampling/logprobs.h"

#include "util/error.h"

namespace hearth {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                                     std::shared_ptr<const TokenTrie> trie)
    : trie_(std::move(trie)), matcher_(std::move(grammar)), masker_(trie_) {}

std::string GrammarConstraint::start_problem(std::shared_ptr<const Grammar> grammar,
                                             std::shared_ptr<const TokenTrie> trie) {
  GrammarConstraint c(std::move(grammar), std::move(trie));
  if (!c.matcher_.error().empty()) return c.matcher_.error();
  if (c.matcher_.dead()) return "the grammar matches no text";
  c.masker_.fill(c.matcher_, c.mask_);
  if (c.mask_.count() == 0)
    return "no token of the vocabulary can begin a text that the grammar matches";
  return "";
}

SampleResult GrammarConstraint::sample(Sampler& sampler, std::span<const float> logits) {
  SampleResult r = sampler.sample(logits);
  if (r.token >= 0 && static_cast<size_t>(r.token) < trie_->n_tokens() &&
      masker_.token_allowed(matcher_, r.token))
    return r;
  masker_.fill(matcher_, mask_);
  if (mask_.count() == 0)
    fail("the grammar cannot continue: no token of the vocabulary matches after {} bytes{}",
         matcher_.n_bytes(), matcher_.error().empty() ? "" : " (" + matcher_.error() + ")");
  ++masked_steps_;
  masked_.assign(logits.begin(), logits.end());
  const float none = -std::numeric_limits<float>::infinity();
  for (size_t t = 0; t < masked_.size(); ++t)
    if (!mask_.test(static_cast<int32_t>(t))) masked_[t] = none;
  SampleResult m = sampler.sample(masked_);
  // Reported logprobs stay those of the model's own distribution (OpenAI's semantics).
  if (sampler.params().n_probs > 0) {
    m.top_logprobs = std::move(r.top_logprobs);
    m.logprob = logits[static_cast<size_t>(m.token)] - logsumexp(logits);
  }
  if (!mask_.test(m.token))
    fail("the grammar allows no token the sampler can choose (every allowed token was cut)");
  return m;
}

void GrammarConstraint::accept(int32_t token) {
  if (trie_->is_end_token(token)) return;
  if (token < 0 || static_cast<size_t>(token) >= trie_->n_tokens() ||
      !matcher_.accept_bytes(trie_->piece(token)))
    fail("token {} does not continue the grammar{}", token,
         matcher_.error().empty() ? "" : ": " + matcher_.error());
}

}  // namespace hearth
