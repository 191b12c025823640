// Constrained sampling: a sequence's sampler limited to the tokens a grammar allows next.
//
// Each step samples as usual first and keeps the token when the grammar allows it (one trie
// lookup: the common case costs almost nothing); only when it does not are the disallowed
// logits set to -inf (the grammar's mask over the whole vocabulary, grammar_masker.h) and the
// sampler run again on what is left. So every stage of the chain, the renormalising ones
// included, sees only allowed tokens whenever the mask is applied. The end-of-generation
// tokens are allowed exactly when the text so far is a whole match.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_masker.h"
#include "sampling/grammar_matcher.h"
#include "sampling/sampler.h"
#include "sampling/token_mask.h"
#include "sampling/token_trie.h"

namespace hearth {

class GrammarConstraint {
 public:
  GrammarConstraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie);

  // Why nothing can be generated under `grammar` with this vocabulary from its start (the
  // matcher past its limits there, e.g. a 10,000-way alternative, or no token whose first byte
  // begins a match while the empty text is no match either), or "" when something can. For a refusal
  // before generation starts; the same conditions later in the text end the reply (sample()).
  static std::string start_problem(std::shared_ptr<const Grammar> grammar,
                                   std::shared_ptr<const TokenTrie> trie);

  // The next token from `logits` under the grammar. Throws hearth::Error when no token of the
  // vocabulary can continue the text and it cannot end here (a grammar the vocabulary cannot
  // satisfy): the request ends with that error rather than producing text the grammar rejects.
  SampleResult sample(Sampler& sampler, std::span<const float> logits);
  // Records the chosen token (its piece goes into the matcher; an end token adds nothing).
  void accept(int32_t token);
  // Records text generated before the grammar applied (a lazy grammar's trigger and what
  // followed it in the same token); false when the grammar refuses it.
  bool accept_text(std::string_view bytes) { return matcher_.accept_bytes(bytes); }

  // The text so far is a whole match of the grammar.
  bool complete() const { return matcher_.can_end(); }
  // How many steps needed the full mask (the rest kept their first sample).
  int64_t masked_steps() const { return masked_steps_; }

 private:
  std::shared_ptr<const TokenTrie> trie_;
  GrammarMatcher matcher_;
  GrammarMasker masker_;
  TokenMask mask_;
  std::vector<float> masked_;  // the logits row with disallowed tokens at -inf
  int64_t masked_steps_ = 0;
};

}  // namespace hearth
