// The tokenizer facade: one object per model, dispatching on the vocabulary's model type.
// Supported: SPM ("llama", spm.h), byte-level BPE ("gpt2": GPT-2, Llama 3, Qwen, DeepSeek...,
// bpe.h) and WordPiece ("bert", wpm.h); other types (t5, rwkv) are refused at construction with a
// clear Error.
//
// Thread safety: a Tokenizer is immutable after construction (the BPE word cache is internally
// synchronized); encode/decode may run concurrently from any number of threads. Copies are
// cheap and share everything. A StreamingDetokenizer is per sequence.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

namespace hearth {

namespace gguf {
class File;
}

class WpmModel;

// What encode and encode_with_control_ranges have done so far (for tests and benchmarks that
// check how often a request path tokenizes): calls, input bytes, wall time.
struct EncodeStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  int64_t nanoseconds = 0;
};

class Tokenizer {
 public:
  // Loads the vocabulary from the file's tokenizer.ggml.* metadata (any GGUF: a model or a
  // vocabulary-only file; tensors are not read). Throws Error when the metadata is missing or
  // invalid, or the model type is not supported ("tokenizer model 't5' is not supported").
  static Tokenizer from_gguf(const gguf::File& file);
  // Wraps an already built vocabulary (unit tests). Same support check.
  static Tokenizer from_vocab(Vocab vocab);
  static Tokenizer from_vocab(Vocab vocab, const BpeModel::Options& bpe_options);

  // Text -> ids, as llama.cpp's llama_tokenize(text, add_special, parse_special):
  // `add_special` adds BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token...; for
  // WordPiece: [CLS] ... [SEP]); `parse_special` turns CONTROL token texts found in the text
  // (e.g. "<s>", "<|im_start|>") into their ids (USER_DEFINED token texts always are).
  // Any byte string is accepted, valid UTF-8 or not, and never crashes: SPM keeps ill-formed
  // bytes through byte fallback; byte-level BPE keeps them as their byte-level characters, so
  // decode(encode(x)) == x byte for byte (for vocabularies with a token for every byte; see
  // bpe.h for MPT / DeepSeek); WordPiece drops them (they read as U+FFFD, which BERT's
  // normalizer removes).
  std::vector<TokenId> encode(std::string_view text, bool add_special = true,
                              bool parse_special = false) const;
  // As encode with parse_special, but CONTROL texts count only inside `control_ranges` (see
  // split_special_tokens): for rendered chat prompts, where only the template's own text may
  // carry control tokens.
  std::vector<TokenId> encode_with_control_ranges(std::string_view text, bool add_special,
                                                  const ByteRanges& control_ranges) const;

  // Ids -> raw bytes (see hearth::decode and DecodeOptions).
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;
  std::string token_to_piece(TokenId id, bool render_special = false) const;
  // A streaming detokenizer for this vocabulary (it shares ownership of the vocabulary, so it
  // may outlive the Tokenizer).
  StreamingDetokenizer streaming_detokenizer(DecodeOptions options = {}) const;

  // Counted over this tokenizer and its copies, since construction.
  EncodeStats encode_stats() const;

  const Vocab& vocab() const { return *vocab_; }
  size_t n_vocab() const { return vocab_->n_tokens(); }
  TokenId bos() const { return vocab_->bos(); }
  TokenId eos() const { return vocab_->eos(); }
  bool is_eog(TokenId id) const { return vocab_->is_eog(id); }

  // The BPE model (merges, pre-tokenizer, cache); null for other model types.
  const BpeModel* bpe() const { return bpe_.get(); }

 private:
  struct EncodeCounter {
    std::atomic<int64_t> calls{0}, bytes{0}, nanoseconds{0};
  };
  explicit Tokenizer(std::shared_ptr<const Vocab> vocab)
      : vocab_(std::move(vocab)), counter_(std::make_shared<EncodeCounter>()) {}
  std::vector<TokenId> encode_impl(std::string_view text, bool add_special, bool parse_special,
                                   const ByteRanges* control_ranges) const;

  std::shared_ptr<const Vocab> vocab_;  // shared: copies are cheap, the address is stable
  std::shared_ptr<const BpeModel> bpe_;
  std::shared_ptr<const WpmModel> wpm_;
  std::shared_ptr<EncodeCounter> counter_;
};

}  // namespace hearth
