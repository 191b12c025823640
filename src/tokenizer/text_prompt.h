// A prompt given as text, and how it becomes ids. The engine tokenizes a text prompt against
// the prefix cache: where the text starts with a cached conversation's text, that
// conversation's tokens are reused as they were computed and only the rest is tokenized
// (kv/prefix_cache.h). The chat layer builds these prompts; both tokenize them the one way
// written here, so a prompt counted by one is the prompt the other computes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace hearth {

struct TextPrompt {
  std::string text;
  bool add_special = true;    // BOS (and the like) as the vocabulary asks
  bool parse_special = true;  // special-token text becomes special tokens...
  // ...only inside these byte ranges when non-empty (the chat template's own text, so message
  // content cannot inject control tokens)
  std::vector<std::pair<size_t, size_t>> special_ranges;
  // The ids of the whole prompt (lead tokens included) when the caller has already tokenized
  // it with tokenize_prompt; the engine then does not tokenize it again. Empty: the engine
  // tokenizes `text`.
  std::vector<int32_t> tokens;
};

// A text prompt's ids: the vocabulary's lead tokens (BOS, with add_special) then the text,
// special-token text parsed only inside special_ranges.
std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const TextPrompt& prompt);

// A text prompt's ids and the text each one ends at, for matching by text.
struct PromptTokens {
  std::vector<int32_t> ids;
  size_t n_lead = 0;      // lead tokens (BOS) before the text; their ends are 0
  bool has_text = false;  // the text tokens' pieces reproduce the text exactly (byte-level
                          // BPE does; SPM's added space prefix does not): `ends` is filled
  std::vector<uint32_t> ends;
};

// The ids of `prompt` (its own `tokens` when the caller tokenized it already: they are moved
// out, not tokenized again) with the text each ends at.
PromptTokens tokenize_prompt_with_ends(const Tokenizer& tok, TextPrompt& prompt);

}  // namespace hearth
