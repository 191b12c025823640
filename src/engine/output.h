// The output stage of one sequence: what a sampled token becomes for the client. Each logits row
// is sampled (the request's sampler chain), the token detokenized (StreamingDetokenizer: only
// complete UTF-8 characters), its text passed through the stop strings (StopMatcher: no partial
// or matched stop text is shown) and turned into a Token event with its logprobs; at the end the
// text still held back goes with the Finished event. The engine schedules and computes; this
// decides what is said. (The reasoning split is above, in chat/reply_stream.h.)
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/request.h"
#include "engine/stop_matcher.h"
#include "sampling/grammar_constraint.h"
#include "sampling/sampler.h"
#include "sampling/vocab_access.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace hearth {

// What one sampled token gave.
struct TokenOutput {
  // A Token event: the generated id, the text now safe to show, the logprobs when asked for.
  EngineEvent event;
  // The text the token stands for in the conversation (text anchoring, kv/prefix_cache.h): what
  // the client received of it, or the end-of-generation token as the template writes it. Empty
  // while the token's bytes are held back (an incomplete character).
  std::string anchor_text;
  bool stop = false;  // an end-of-generation token or a stop string ended the reply
};

class SequenceOutput {
 public:
  // `request.sampling` must be set; its parameters are validated (Error naming the parameter).
  // `tok` must outlive this object. `trie` (the vocabulary's pieces) is needed only when the
  // request has a grammar.
  SequenceOutput(const GenerationRequest& request, const Tokenizer& tok, const VocabAccess& vocab,
                 std::shared_ptr<const TokenTrie> trie = nullptr);

  // Samples the next token from one logits row of the sequence whose tokens so far (prompt and
  // generated) are `tokens`: the prompt counts for penalties from the first token on. Throws
  // hearth::Error when the request's grammar cannot be continued.
  TokenOutput next(std::span<const float> logits, std::span<const int32_t> tokens);

  // End of generation, first step: the bytes the detokenizer still held (an incomplete
  // character, as U+FFFD), the last piece of the text anchor. Called again, the same bytes.
  const std::string& flush();
  // End of generation: the Finished event, with the text still held back (none when cancelled).
  EngineEvent finished(FinishReason reason, const std::string& error, const RequestStats& stats);

  int64_t generated() const { return generated_; }

 private:
  const Tokenizer& tok_;
  Sampler sampler_;
  // The grammar not yet applied (a lazy one, waiting for its trigger), and the end of the
  // reply's bytes where the trigger may begin.
  struct LazyGrammar {
    std::shared_ptr<const Grammar> grammar;
    std::shared_ptr<const TokenTrie> trie;
    std::string trigger;
    std::string tail;
  };
  void watch_trigger(int32_t id);

  std::optional<GrammarConstraint> grammar_;
  std::optional<LazyGrammar> lazy_;
  StreamingDetokenizer detok_;
  StopMatcher stops_;
  bool stop_at_eog_;
  bool logprobs_;
  int64_t generated_ = 0;
  bool flushed_ = false;
  std::string tail_;  // what flush() took from the detokenizer
};

}  // namespace hearth
