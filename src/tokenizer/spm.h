// SentencePiece-style BPE ("SPM", tokenizer.ggml.model = "llama"), as llama.cpp implements it
// (llm_tokenizer_spm): no normalization besides space escaping, greedy merging of adjacent
// symbols by the score of the merged token, byte fallback for what no token covers.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/special.h"
#include "tokenizer/vocab.h"

namespace hearth {

// Segments `text`, which must already have its spaces escaped to U+2581 (and any space prefix
// added), and appends the ids to `out`:
//  1. split into UTF-8 characters; each byte of an ill-formed sequence (stray continuation,
//     truncated, overlong, surrogate...) is a symbol of its own, so nothing fails and every
//     byte comes back through byte fallback. (llama.cpp instead gives a lead byte its
//     announced length whatever follows, so "\xC3" + " x" swallows the first byte of the
//     escaped space and decoding no longer round-trips; for valid UTF-8 the two agree, since
//     vocabulary texts are valid UTF-8.)
//  2. repeatedly merge the adjacent pair whose concatenation is a token with the highest
//     score (ties: the leftmost pair), with a priority queue: O(n log n);
//  3. emit each final symbol's token; a symbol that is no token (a character outside the
//     vocabulary) becomes one byte token <0xXX> per byte, else the unknown token.
// Throws Error only when a byte has no token and the vocabulary has no unknown token.
void spm_segment(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

// Tokenizes `text` the way llama.cpp's llama_tokenize does for an SPM vocabulary:
//  - with `add_special`, BOS first when the vocabulary adds it, EOS last when it adds that;
//  - special token texts split first (see split_special_tokens; CONTROL texts such as <s>
//    only with `parse_special`);
//  - each raw fragment gets a leading space when the vocabulary has add_space_prefix and the
//    fragment starts the text or follows a special token (llama.cpp's "is_prev_special" rule),
//    then spaces become U+2581 and it is segmented with spm_segment;
//  - an empty text gives no text tokens (only BOS/EOS with add_special).
std::vector<TokenId> spm_tokenize(const Vocab& vocab, std::string_view text, bool add_special,
                                  bool parse_special, const ByteRanges* control_ranges = nullptr);

}  // namespace hearth
