// WordPiece (tokenizer.ggml.model = "bert": BERT, BGE, ... embedding models), as Hugging Face's
// BertNormalizer + BertPreTokenizer + WordPiece define it:
//  1. normalize: drop NUL, U+FFFD and other-category characters (Cc/Cf/Co/Cn; \t \n \r count
//     as whitespace), turn White_Space into ' ', put spaces around CJK ideographs, NFD and drop
//     non-spacing marks (strip accents), lower-case (utf8proc). NFD takes Hangul syllables
//     apart into conjoining jamo (U+1100..U+11FF, letters, so they stay), as BERT's
//     BasicTokenizer does; Hangul is not in the CJK ranges, so it stays inside its word. The
//     CJK ranges are HF tokenizers' (0x2B920.. where BERT's Python has 0x2B820..): the
//     reference the vocabularies' vectors come from;
//  2. split at whitespace, and isolate every punctuation character (Unicode P* or ASCII
//     punctuation/symbols) as a word of its own;
//  3. per word, greedy longest-match-first: the first piece must be a word-initial token, the
//     following ones continuation tokens; a word with no full segmentation, or longer than 100
//     characters, becomes the unknown token.
// In GGUF files word-initial tokens carry a U+2581 prefix and continuation tokens have lost their
// "##" (llama.cpp's conversion), so the lookups here follow that convention.
//
// Ill-formed UTF-8 decodes to U+FFFD, which step 1 drops (as it drops every U+FFFD): WordPiece
// is lossy by design (lower-casing, accents), so decode(encode(x)) == x is not a goal here.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "tokenizer/special.h"
#include "tokenizer/vocab.h"

namespace hearth {

class WpmModel {
 public:
  explicit WpmModel(std::shared_ptr<const Vocab> vocab);

  // llama_tokenize for a WordPiece vocabulary: with `add_special`, [CLS] (BOS) first when the
  // vocabulary adds it and [SEP] last; special texts split first (parse_special as elsewhere).
  std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special,
                                const ByteRanges* control_ranges = nullptr) const;
  // Appends the ids of a raw text fragment (no special-token handling).
  void encode_fragment(std::string_view text, std::vector<TokenId>& out) const;
  // Steps 1 and 2 only: the words of `text`, as UTF-8 (exposed for tests).
  std::vector<std::string> words(std::string_view text) const;

  static constexpr size_t kMaxWordChars = 100;

 private:
  void encode_word(std::string_view word, size_t n_chars, std::vector<TokenId>& out) const;

  std::shared_ptr<const Vocab> vocab_;
  TokenId unk_ = kNoToken;
};

}  // namespace hearth
