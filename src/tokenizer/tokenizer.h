// The tokenizer facade: one object per model, dispatching on the vocabulary's model type.
// Supported now: SPM ("llama"). Byte-level BPE ("gpt2": llama3, qwen...) comes later and slots
// in beside it (an encoder in bpe.cpp plus its piece rendering); other types are refused at
// construction with a clear Error.
//
// Thread safety: a Tokenizer is immutable after construction; encode/decode may run
// concurrently. A StreamingDetokenizer is per sequence.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "tokenizer/vocab.h"

namespace hearth {

namespace gguf {
class File;
}

class Tokenizer {
 public:
  // Loads the vocabulary from the file's tokenizer.ggml.* metadata. Throws Error when the
  // metadata is missing or invalid, or "tokenizer model 'gpt2' is not supported yet".
  static Tokenizer from_gguf(const gguf::File& file);
  // Wraps an already built vocabulary (unit tests). Same support check.
  static Tokenizer from_vocab(Vocab vocab);

  // Text -> ids, as llama.cpp's llama_tokenize(text, add_special, parse_special):
  // `add_special` adds BOS/EOS as the vocabulary asks (tokenizer.ggml.add_bos_token...);
  // `parse_special` turns CONTROL token texts found in the text (e.g. "<s>") into their ids
  // (USER_DEFINED token texts always are). Any byte string is accepted, valid UTF-8 or not.
  std::vector<TokenId> encode(std::string_view text, bool add_special = true,
                              bool parse_special = false) const;

  // Ids -> raw bytes (see hearth::decode and DecodeOptions).
  std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;
  std::string token_to_piece(TokenId id, bool render_special = false) const;
  // A streaming detokenizer for this vocabulary (it shares ownership of the vocabulary, so it
  // may outlive the Tokenizer).
  StreamingDetokenizer streaming_detokenizer(DecodeOptions options = {}) const;

  const Vocab& vocab() const { return *vocab_; }
  size_t n_vocab() const { return vocab_->n_tokens(); }
  TokenId bos() const { return vocab_->bos(); }
  TokenId eos() const { return vocab_->eos(); }
  bool is_eog(TokenId id) const { return vocab_->is_eog(id); }

 private:
  explicit Tokenizer(std::shared_ptr<const Vocab> vocab) : vocab_(std::move(vocab)) {}

  std::shared_ptr<const Vocab> vocab_;  // shared: copies are cheap, the address is stable
};

}  // namespace hearth
