// Pre-tokenization for byte-level BPE vocabularies: the regular expressions that cut text into
// the "words" BPE then merges within, selected by the GGUF key `tokenizer.ggml.pre`.
//
// A pre-tokenizer is a sequence of regexes, applied as Hugging Face's `Split(pattern,
// behavior="isolated")` pre-tokenizers chained in a `Sequence`: the first regex cuts the text
// into its matches and the runs between them (both kept, in order), the next regex cuts each of
// those pieces the same way (a piece is the whole subject: lookaheads and `$` stop at its end),
// and so on. The patterns are the ones the models' tokenizer.json files (and llama.cpp, for the
// GGUF names) define; they run on PCRE2 with UTF + UCP semantics, JIT-compiled when available.
// `\s` is Unicode White_Space (as in Oniguruma, which Hugging Face tokenizers uses), not PCRE2's
// own \s, which differs in U+0085 and U+180E.
//
// Invalid UTF-8 (which Hugging Face cannot even represent) is handled before any regex runs:
// every maximal run of bytes that do not form well-formed UTF-8 characters is a piece of its
// own, and the regexes run on the well-formed runs between them. So an ill-formed sequence
// never merges with its neighbours, nothing is lost, and byte-level BPE then encodes its raw
// bytes (decode gives them back exactly).
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hearth {

// What a `tokenizer.ggml.pre` value selects.
struct BpePreInfo {
  std::string_view family;                     // canonical name of the regex set ("llama3", ...)
  std::span<const std::string_view> patterns;  // applied in sequence (see above)
  bool ignore_merges = false;  // a pre-token that is itself a token is emitted whole (Llama 3)
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token for this family
  bool known = true;           // false: the name is not recognised (see bpe_pre_info)
};

// The pre-tokenizer for a `tokenizer.ggml.pre` value. Recognised: the llama.cpp names for the
// gpt-2, llama3 (llama-bpe...), qwen2, deepseek-llm, deepseek-coder, deepseek-v3, falcon, mpt,
// starcoder, refact, command-r, smollm, stablelm2, olmo, dbrx, smaug-bpe, chatglm-bpe/glm4,
// poro-chat, bloom, viking, jais, tekken, codeshell, exaone, minerva-7b, gpt-4o/llama4, ...
// families. An empty name (files from before the key existed) and "default" select llama.cpp's
// "default" BPE set. Any other name is not an error: it falls back to the GPT-2 regex, with
// `known` false so that the caller can warn (Tokenizer logs a warning naming the value).
BpePreInfo bpe_pre_info(std::string_view pre);

// Every name bpe_pre_info recognises (for tests and --help texts).
std::span<const std::string_view> bpe_pre_names();

struct TextSpan {
  size_t offset = 0;
  size_t length = 0;
};

// A compiled regex sequence. Immutable after construction: split() may run concurrently from any
// number of threads (each thread keeps its own PCRE2 match data and JIT stack).
class PreTokenizer {
 public:
  // Compiles the patterns (rewriting \s and \S as described above). Throws Error naming the
  // pattern and position when one does not compile.
  explicit PreTokenizer(std::span<const std::string_view> patterns);
  ~PreTokenizer();
  PreTokenizer(PreTokenizer&&) noexcept;
  PreTokenizer& operator=(PreTokenizer&&) noexcept;
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // Calls fn(ctx, offset, length) for each piece of `text`: non-empty, in order, covering every
  // byte exactly once. Never fails: a regex that errors out at run time (a PCRE2 resource limit
  // on a pathological input) leaves the rest of its piece uncut.
  using PieceFn = void (*)(void* ctx, size_t offset, size_t length);
  void split(std::string_view text, PieceFn fn, void* ctx) const;
  template <typename F>
  void for_each_piece(std::string_view text, F&& f) const {
    split(
        text,
        [](void* ctx, size_t offset, size_t length) { (*static_cast<F*>(ctx))(offset, length); },
        &f);
  }
  // The same, collected.
  void split(std::string_view text, std::vector<TextSpan>& out) const;
  std::vector<std::string> split(std::string_view text) const;

  bool jit() const;  // true when every pattern was JIT-compiled

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `pattern` with \s and \S replaced by the explicit White_Space class (exposed for tests).
std::string expand_whitespace_classes(std::string_view pattern);

}  // namespace hearth
