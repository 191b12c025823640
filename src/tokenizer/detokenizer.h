// Token ids -> text, one-shot and streaming, as llama.cpp renders pieces (token_to_piece).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "tokenizer/vocab.h"

namespace hearth {

struct DecodeOptions {
  // Render CONTROL and UNKNOWN tokens (<s>, </s>, <unk>, <|im_end|>...) as their text instead of
  // as nothing (llama.cpp's `special` / `unparse_special`).
  bool render_special = false;
  // Undo the space the encoder prepends (SPM add_space_prefix): remove one leading space from
  // the first piece that renders any text. Off by default, because llama.cpp's generated text
  // keeps it (llama-server concatenates pieces: "[403 ▁Once, ...]" -> " Once ..."). With it on,
  // decode(encode(text)) == text for plain text, with or without BOS. (llama.cpp's
  // llama_detokenize strips only when the very first id is not BOS; this rule skips the
  // pieces that render empty instead.)
  bool strip_space_prefix = false;
};

// The bytes one token stands for:
//  - NORMAL: SPM and WordPiece: its text with U+2581 turned into spaces; byte-level BPE: the
//    bytes its byte-level characters stand for (byte_level.h; other characters verbatim);
//  - BYTE (<0xAB>): that single raw byte, which may be part of a multi-byte character;
//  - USER_DEFINED: its text, verbatim;
//  - CONTROL, UNKNOWN: "" unless `render_special` (then the text, verbatim);
//  - UNUSED, UNDEFINED: "".
// Throws Error for an id outside the vocabulary.
std::string token_to_piece(const Vocab& vocab, TokenId id, bool render_special = false);
void append_piece(const Vocab& vocab, TokenId id, bool render_special, std::string& out);

// The concatenated pieces of `ids`: raw bytes, not necessarily valid UTF-8 (byte tokens may
// come in any order); decode(encode(x)) round-trips the bytes of x. Callers that need valid
// UTF-8 use utf8_sanitize() or the StreamingDetokenizer.
std::string decode(const Vocab& vocab, std::span<const TokenId> ids,
                   const DecodeOptions& options = {});

// Incremental decoding for generation: feed ids one at a time, get back text that is always
// complete, valid UTF-8. Bytes of a multi-byte character split across byte tokens are held
// back until the character is complete; ill-formed sequences become U+FFFD (one per maximal
// subpart) as soon as they are known to be ill-formed; flush() ends the stream and turns a
// held-back incomplete character into U+FFFD. The concatenation of every push() and the final
// flush() equals utf8_sanitize(decode(ids)), i.e. decode(ids) whenever that is valid UTF-8.
class StreamingDetokenizer {
 public:
  // Holds a reference to `vocab`, which must outlive the detokenizer.
  explicit StreamingDetokenizer(const Vocab& vocab, DecodeOptions options = {});
  // Shares ownership of the vocabulary.
  explicit StreamingDetokenizer(std::shared_ptr<const Vocab> vocab, DecodeOptions options = {});

  // Adds one token; returns the text that became complete (possibly empty).
  std::string push(TokenId id);
  // Same, appending to `out` instead; returns the number of bytes appended.
  size_t push(TokenId id, std::string& out);
  // Ends the stream: returns what was held back (as U+FFFD), and resets the state.
  std::string flush();
  // Forgets everything (a new sequence, with the leading-space rule armed again).
  void reset();

  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  std::shared_ptr<const Vocab> owner_;  // null when constructed from a reference
  const Vocab* vocab_;
  DecodeOptions options_;
  std::string pending_;
  std::string piece_;
  bool at_start_ = true;
};

}  // namespace hearth
