// Splitting input text at the texts of special tokens, before the tokenization algorithm runs
// on the pieces in between (llama.cpp's tokenizer_st_partition). Shared by every model type.
#pragma once

#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/vocab.h"

namespace hearth {

using ByteRanges = std::vector<std::pair<size_t, size_t>>;

// A piece of the input: either a special token, or a byte range of raw text to tokenize.
struct Fragment {
  TokenId token = kNoToken;  // kNoToken: raw text [offset, offset + length)
  size_t offset = 0;
  size_t length = 0;

  bool is_token() const { return token != kNoToken; }
};

// Splits `text` at occurrences of special token texts (Vocab::special_tokens(), longest
// first; each token splits what the longer ones left as raw text, leftmost match first).
//  - USER_DEFINED tokens are always matched (llama.cpp and Hugging Face pre-split added tokens
//    even when special parsing is off): e.g. phi-3 types "</s>" USER_DEFINED, so its text is
//    id 2 either way; MPT's whitespace-run tokens need it to match its reference vectors;
//  - CONTROL and UNKNOWN tokens (<s>, </s>, <unk>, <|im_end|>...) only with `parse_special`;
//    otherwise their text stays plain text.
//  - a token with the RSTRIP (LSTRIP) attribute swallows the ASCII whitespace after (before) it.
// Raw fragments are never empty; an empty text gives no fragments.
// `control_ranges`, when not null, narrows `parse_special` to CONTROL/UNKNOWN texts lying wholly
// inside one of these byte ranges [begin, end) (sorted, disjoint): a chat template's own text,
// so message content cannot inject control tokens.
std::vector<Fragment> split_special_tokens(const Vocab& vocab, std::string_view text,
                                           bool parse_special,
                                           const ByteRanges* control_ranges = nullptr);

}  // namespace hearth
