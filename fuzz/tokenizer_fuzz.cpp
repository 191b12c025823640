// libFuzzer target for the tokenizers. Arbitrary bytes (valid UTF-8 or not) are encoded with
// real vocabularies and must never crash, hang or throw; every id must be in range; and:
//  - byte-level BPE: decode(encode(text)) == text, byte for byte (ill-formed UTF-8 included);
//    with parse_special, rendering special tokens gives the text back as well;
//  - every vocabulary: the streaming detokenizer's chunks are valid UTF-8 and concatenate to
//    utf8_sanitize(decode(ids)).
// The first input byte picks the vocabulary (low bits) and the flags (add_special = 0x40,
// parse_special = 0x80); the rest is the text.
//
// Vocabularies: $HEARTH_TOKENIZER_FUZZ_VOCABS, a ':'-separated list of GGUF files (models or
// vocabulary-only files); by default the Qwen3 and Llama 3 vocabularies of
// $HEARTH_SHARED_DIR (default: ../shared beside the source tree)/tokenizers.
//
//   scripts/build.sh asan tokenizer_fuzz     # the sanitizer build (clang) holds the fuzz targets
//   mkdir -p build-asan/tok-corpus
//   build-asan/fuzz/tokenizer_fuzz -max_total_time=60 -max_len=512 build-asan/tok-corpus
// (fuzz/run_tokenizer_fuzz.sh does this with seeds.)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace {

std::vector<std::unique_ptr<hearth::Tokenizer>>& tokenizers() {
  static std::vector<std::unique_ptr<hearth::Tokenizer>> t;
  return t;
}

[[noreturn]] void die(const char* what, std::string_view text, const std::string& detail = {}) {
  std::fprintf(stderr, "tokenizer_fuzz: %s (%zu-byte text)%s%s\n", what, text.size(),
               detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

std::vector<std::string> vocab_paths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("HEARTH_TOKENIZER_FUZZ_VOCABS"); env && *env) {
    std::string_view s = env;
    while (!s.empty()) {
      const size_t colon = s.find(':');
      const std::string_view p = s.substr(0, colon);
      if (!p.empty()) paths.emplace_back(p);
      if (colon == std::string_view::npos) break;
      s.remove_prefix(colon + 1);
    }
    return paths;
  }
  const char* shared = std::getenv("HEARTH_SHARED_DIR");
  const std::string dir = (shared && *shared) ? shared : HEARTH_SHARED_DIR_DEFAULT;
  return {dir + "/tokenizers/vocab-qwen3.gguf", dir + "/tokenizers/vocab-llama3.gguf"};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  for (const std::string& path : vocab_paths()) {
    try {
      const hearth::gguf::File file = hearth::gguf::File::open(path);
      tokenizers().push_back(
          std::make_unique<hearth::Tokenizer>(hearth::Tokenizer::from_gguf(file)));
      std::fprintf(stderr, "tokenizer_fuzz: %s (%zu tokens, model %s, pre '%s')\n", path.c_str(),
                   tokenizers().back()->n_vocab(), tokenizers().back()->vocab().model().c_str(),
                   tokenizers().back()->vocab().pre().c_str());
    } catch (const hearth::Error& e) {
      std::fprintf(stderr, "tokenizer_fuzz: cannot load %s: %s\n", path.c_str(), e.what());
      std::abort();
    }
  }
  if (tokenizers().empty()) {
    std::fprintf(stderr, "tokenizer_fuzz: no vocabularies (set HEARTH_TOKENIZER_FUZZ_VOCABS)\n");
    std::abort();
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto& toks = tokenizers();
  const hearth::Tokenizer& tok = *toks[data[0] % toks.size()];
  const bool add_special = data[0] & 0x40;
  const bool parse_special = data[0] & 0x80;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  const bool bpe = tok.vocab().type() == hearth::VocabType::Bpe;

  std::vector<hearth::TokenId> ids;
  try {
    ids = tok.encode(text, add_special, parse_special);
  } catch (const hearth::Error& e) {
    die("encode threw", text, e.what());
  }
  for (const hearth::TokenId id : ids) {
    if (!tok.vocab().valid_id(id)) die("id out of range", text, std::to_string(id));
  }

  std::string decoded;
  try {
    decoded = tok.decode(ids, {.render_special = parse_special});
  } catch (const hearth::Error& e) {
    die("decode threw", text, e.what());
  }
  // Byte-exact round trip wherever every byte has a NORMAL byte-level token (always for
  // well-formed UTF-8; MPT / DeepSeek lack the 13 bytes that never occur in UTF-8).
  bool representable = bpe;
  for (size_t i = 0; representable && i < text.size(); ++i) {
    const hearth::TokenId b = tok.vocab().byte_to_token(static_cast<uint8_t>(text[i]));
    representable = b != hearth::kNoToken && tok.vocab().is_normal(b);
  }
  if (bpe && hearth::utf8_is_valid(text) && !representable) {
    die("well-formed UTF-8 the vocabulary cannot represent", text);
  }
  if (representable && !add_special && decoded != text) {
    die("BPE decode(encode(text)) != text", text);
  }
  if (representable && add_special && !parse_special && tok.decode(ids) != text) {
    die("BPE decode(encode(text, add_special)) != text", text);
  }

  // Streaming: valid UTF-8 chunks whose concatenation is the sanitized one-shot decode.
  hearth::StreamingDetokenizer stream =
      tok.streaming_detokenizer({.render_special = parse_special});
  std::string streamed;
  for (const hearth::TokenId id : ids) {
    const std::string chunk = stream.push(id);
    if (!hearth::utf8_is_valid(chunk)) die("streamed chunk is not valid UTF-8", text);
    streamed += chunk;
  }
  const std::string tail = stream.flush();
  if (!hearth::utf8_is_valid(tail)) die("streamed tail is not valid UTF-8", text);
  streamed += tail;
  if (streamed != hearth::utf8_sanitize(decoded)) {
    die("streamed text != utf8_sanitize(decode(ids))", text);
  }
  return 0;
}
