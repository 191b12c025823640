// What the sampling layer needs from the vocabulary, passed in by the caller (the sampling
// layer does not link the tokenizer).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

struct VocabAccess {
  // Entries in a logits row (the model's output width; ids are in [0, n_vocab)).
  int32_t n_vocab = 0;
  // A token's text, for DRY sequence breakers. Needed when DRY is on with breakers.
  std::function<std::string(int32_t token)> token_piece;
  // Plain text to ids (no BOS, no special-token parsing), for logit_bias string keys.
  std::function<std::vector<int32_t>(std::string_view text)> tokenize;
};

}  // namespace hearth
