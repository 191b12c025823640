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
  const GrammarMatcher start(std::move(grammar));
  if (!start.error().empty()) return start.error();
  if (start.dead()) return "the grammar matches no text";
  if (start.can_end()) return "";
  // Some token's first byte must continue the grammar. (A whole mask over the vocabulary would
  // cost a masked step's time on every request; this reads each first byte once. A token that
  // starts well and fails later ends the reply with the grammar's error instead.)
  const auto nodes = trie->nodes();
  for (size_t i = 0; i < nodes.size(); i = nodes[i].subtree_end) {
    GrammarMatcher m = start;
    const char first = static_cast<char>(nodes[i].byte);
    if (m.accept_bytes(std::string_view(&first, 1))) return "";
  }
  return "no token of the vocabulary can begin a text that the grammar matches";
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
