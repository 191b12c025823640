// Byte-level BPE (tokenizer.ggml.model = "gpt2": GPT-2, Llama 3, Qwen, DeepSeek, MPT, ...), as
// Hugging Face tokenizers' ByteLevel + BPE models define it and llama.cpp implements it:
//  1. special token texts are split off first (split_special_tokens: USER_DEFINED always,
//     CONTROL only with parse_special);
//  2. each raw fragment is cut into pre-tokens by the regex sequence tokenizer.ggml.pre selects
//     (pretokenizer.h);
//  3. each pre-token's bytes become their GPT-2 byte-level characters (byte_level.h), one symbol
//     per byte, and the adjacent pair with the lowest merge rank (its index in
//     tokenizer.ggml.merges) is merged, leftmost first among equal pairs, until no pair has a
//     merge; every final symbol is a token. With `ignore_merges` (Llama 3, Tekken), a pre-token
//     that is itself in the vocabulary is emitted whole without merging.
//
// Merges are held as a flat hash map (left id, right id) -> (rank, merged id), so merging never
// touches strings; a dense 256x256 table serves the first round (byte pairs), and a small
// filter plus a table of the 16K lowest-rank merges answer most later probes without touching
// the multi-megabyte full table. Short words merge by scanning a rank array; long ones (> 64
// bytes) through a priority queue over a linked list, O(n log n). A merge whose parts or result
// are not tokens can never apply to a token sequence and is skipped at load (counted in
// n_skipped_merges()).
//
// Bytes: every byte becomes its byte-level character's token, so any byte string, valid UTF-8
// or not, encodes and decodes back exactly, provided the vocabulary has a NORMAL token for each
// byte. GPT-2, Qwen and Llama 3 have all 256; MPT has no token for the 13 bytes that never occur
// in UTF-8 (C0, C1, F5..FF: they become the unknown token, or an Error without one) and DeepSeek
// has them as USER_DEFINED tokens that render as their 2-byte text, so ill-formed input with
// those bytes does not round-trip there (well-formed UTF-8 always does).
//
// Fast paths, both exact: a word that is one token and that merging gives whole (checked for
// every token at load; with ignore_merges every token) is found in a flat map from raw bytes;
// other results per pre-token are kept in a bounded, lossy, direct-mapped cache (fixed slots
// guarded by striped mutexes). encode is const and safe to call from any number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/pretokenizer.h"
#include "tokenizer/special.h"
#include "tokenizer/vocab.h"

namespace hearth {

class BpeModel {
 public:
  struct Options {
    size_t cache_entries = size_t{1} << 16;  // per-word cache slots (64 bytes each); 0: none
    size_t heap_merge_min = 65;  // words of this many bytes or more merge through the heap
  };

  // Builds the merge table and compiles the pre-tokenizer. Throws Error when the vocabulary is
  // not byte-level BPE, has no merges, or a merge string is not of the form "left right". An
  // unrecognised tokenizer.ggml.pre logs a warning and uses the GPT-2 regex (see
  // bpe_pre_info).
  explicit BpeModel(std::shared_ptr<const Vocab> vocab, Options options);
  explicit BpeModel(std::shared_ptr<const Vocab> vocab) : BpeModel(std::move(vocab), Options{}) {}
  ~BpeModel();
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // llama_tokenize for a BPE vocabulary: BOS/EOS per add_bos/add_eos with `add_special`,
  // special texts (parse_special), pre-tokenization, merges. Any byte string is accepted:
  // ill-formed UTF-8 is kept byte-exact (see pretokenizer.h) so decode(encode(x)) == x.
  std::vector<TokenId> tokenize(std::string_view text, bool add_special, bool parse_special,
                                const ByteRanges* control_ranges = nullptr) const;
  // Appends the ids of a raw text fragment (no special-token handling).
  void encode_fragment(std::string_view text, std::vector<TokenId>& out) const;
  // Appends the ids of one pre-token (no pre-tokenization).
  void encode_word(std::string_view word, std::vector<TokenId>& out) const;

  const Vocab& vocab() const { return *vocab_; }
  const PreTokenizer& pre_tokenizer() const { return pre_; }
  const BpePreInfo& pre_info() const { return pre_info_; }
  bool ignore_merges() const { return pre_info_.ignore_merges; }
  size_t n_merges() const { return n_merges_; }
  size_t n_skipped_merges() const { return n_skipped_merges_; }

  struct CacheStats {
    size_t hits = 0;
    size_t misses = 0;
    size_t entries = 0;
  };
  CacheStats cache_stats() const;
  void clear_cache() const;

 private:
  struct MergeTable;
  struct TokenMap;
  class WordCache;

  void merge_word(std::string_view word, std::vector<TokenId>& out) const;
  void merge_short_word(std::string_view word, std::vector<TokenId>& out) const;
  void merge_long_word(std::string_view word, std::vector<TokenId>& out) const;
  void push_symbol(TokenId id, uint8_t byte, std::vector<TokenId>& out) const;

  std::shared_ptr<const Vocab> vocab_;
  Options options_;
  BpePreInfo pre_info_;
  PreTokenizer pre_;
  struct PairMerge {
    int32_t rank = INT32_MAX;
    TokenId id = kNoToken;
  };
  std::unique_ptr<MergeTable> merges_;
  std::vector<PairMerge> byte_pairs_;  // [256 * 256]: merges of two single-byte symbols
  std::unique_ptr<TokenMap> tokens_;   // words that encode to one token
  std::unique_ptr<WordCache> cache_;
  TokenId byte_ids_[256];
  size_t n_merges_ = 0;
  size_t n_skipped_merges_ = 0;
};

}  // namespace hearth
