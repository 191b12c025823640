#include "tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <atomic>

#include "tokenizer/utf8.h"
#include "util/error.h"
#include "util/log.h"

namespace hearth {

namespace {

// ---------------------------------------------------------------------------------------------
// The patterns. Non-ASCII characters are written as \x{...} escapes on purpose: several of the
// DeepSeek class members (U+1F7D, U+1FBE, U+1FD3, U+1FDB, U+2126, U+212A) are canonical
// singletons that any Unicode normalization of this source would silently turn into other
// characters.

// GPT-2 (openai-community/gpt2 tokenizer.json, ByteLevel use_regex).
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3 / tiktoken cl100k style: case-insensitive contractions, numbers in runs of 1-3.
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2 / Qwen3: as Llama 3 but every digit alone.
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-4o / Llama 4 (tiktoken o200k).
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Mistral Tekken.
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+)"
    R"(|[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek LLM: newlines, cased letters (Lu/Ll/Lt ranges as the tokenizer lists them), ASCII and
// full-width punctuation, trailing spaces, CJK + Hangul, digit runs.
constexpr std::string_view kDeepseekLlmLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";
constexpr std::string_view kCjkHangul = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

constexpr std::string_view kSeqDefault[] = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)",
                                            R"([0-9][0-9][0-9])"};
constexpr std::string_view kSeqGpt2[] = {kGpt2};
constexpr std::string_view kSeqLlama3[] = {kLlama3};
constexpr std::string_view kSeqQwen2[] = {kQwen2};
constexpr std::string_view kSeqGpt4o[] = {kGpt4o};
constexpr std::string_view kSeqTekken[] = {kTekken};
constexpr std::string_view kSeqDeepseekLlm[] = {
    R"([\r\n])",
    kDeepseekLlmLetters,
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)",
    R"(\s+$)",
    kCjkHangul,
    R"(\p{N}+)"};
constexpr std::string_view kSeqDeepseekCoder[] = {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)",
                                                  kCjkHangul, R"(\p{N})"};
constexpr std::string_view kSeqDeepseekV3[] = {
    R"(\p{N}{1,3})", R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)",
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
    R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"};
constexpr std::string_view kSeqFalcon[] = {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"};
constexpr std::string_view kSeqStarcoder[] = {R"(\p{N})", kGpt2};
constexpr std::string_view kPoro =
    R"( ?[^(\s|.,!?\x{2026}\x{3002}\x{FF0C}\x{3001}\x{964}\x{6D4}\x{60C})]+)";
constexpr std::string_view kSeqPoro[] = {kPoro};
constexpr std::string_view kSeqViking[] = {kPoro, R"(\p{N})"};

struct Family {
  std::string_view family;
  std::span<const std::string_view> patterns;
  bool ignore_merges;
  bool add_bos;
  std::span<const std::string_view> names;
};

constexpr std::string_view kNamesDefault[] = {"default"};
constexpr std::string_view kNamesGpt2[] = {
    "gpt-2",      "phi-2",      "jina-es",    "jina-de",      "gigachat",
    "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code", "roberta-bpe",
    "mpt",        "olmo",       "jais",       "trillion",     "exaone4"};
constexpr std::string_view kNamesLlama3[] = {"llama3",    "llama-v3", "llama-bpe", "falcon3",
                                             "falcon-h1", "pixtral",  "midm-2.0",  "lfm2"};
constexpr std::string_view kNamesLlama3Merges[] = {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"};
constexpr std::string_view kNamesQwen2[] = {"qwen2", "stablelm2", "megrez", "deepseek-r1-qwen"};
constexpr std::string_view kNamesDeepseekLlm[] = {"deepseek-llm"};
constexpr std::string_view kNamesDeepseekCoder[] = {"deepseek-coder"};
constexpr std::string_view kNamesDeepseekV3[] = {"deepseek-v3"};
constexpr std::string_view kNamesFalcon[] = {"falcon"};
constexpr std::string_view kNamesStarcoder[] = {"starcoder", "refact", "command-r", "smollm",
                                                "codeshell", "exaone", "minerva-7b"};
constexpr std::string_view kNamesPoro[] = {"poro-chat", "bloom", "gpt3-finnish"};
constexpr std::string_view kNamesViking[] = {"viking"};
constexpr std::string_view kNamesTekken[] = {"tekken"};
constexpr std::string_view kNamesGpt4o[] = {"gpt-4o", "llama4"};

constexpr Family kFamilies[] = {
    {"default", kSeqDefault, false, false, kNamesDefault},
    {"gpt-2", kSeqGpt2, false, false, kNamesGpt2},
    {"llama3", kSeqLlama3, true, true, kNamesLlama3},
    {"llama3-regex", kSeqLlama3, false, false, kNamesLlama3Merges},
    {"qwen2", kSeqQwen2, false, false, kNamesQwen2},
    {"deepseek-llm", kSeqDeepseekLlm, false, false, kNamesDeepseekLlm},
    {"deepseek-coder", kSeqDeepseekCoder, false, false, kNamesDeepseekCoder},
    {"deepseek-v3", kSeqDeepseekV3, false, false, kNamesDeepseekV3},
    {"falcon", kSeqFalcon, false, false, kNamesFalcon},
    {"starcoder", kSeqStarcoder, false, false, kNamesStarcoder},
    {"poro", kSeqPoro, false, false, kNamesPoro},
    {"viking", kSeqViking, false, false, kNamesViking},
    {"tekken", kSeqTekken, true, true, kNamesTekken},
    {"gpt-4o", kSeqGpt4o, false, false, kNamesGpt4o},
};

std::vector<std::string_view> all_names() {
  std::vector<std::string_view> names;
  for (const Family& f : kFamilies) names.insert(names.end(), f.names.begin(), f.names.end());
  return names;
}

// Unicode White_Space (what \s means in Oniguruma and in the tokenizers' reference
// implementations), as PCRE2 class members.
constexpr std::string_view kWhiteSpace =
    R"(\t\n\x{0B}\f\r\x{20}\x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";

// ---------------------------------------------------------------------------------------------
// Per-thread PCRE2 state: match data (only the overall match is read) and a JIT stack.

constexpr uint32_t kOvectorPairs = 16;

struct ThreadState {
  pcre2_match_data* md = nullptr;
  pcre2_jit_stack* stack = nullptr;
  pcre2_match_context* ctx = nullptr;

  ThreadState() {
    md = pcre2_match_data_create(kOvectorPairs, nullptr);
    ctx = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    if (!md || !ctx) fail("PCRE2: out of memory creating match data");
    if (stack) pcre2_jit_stack_assign(ctx, nullptr, stack);
  }
  ~ThreadState() {
    pcre2_match_data_free(md);
    pcre2_match_context_free(ctx);
    pcre2_jit_stack_free(stack);
  }
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

std::atomic<bool> g_warned_match_error{false};

}  // namespace

// ---------------------------------------------------------------------------------------------

BpePreInfo bpe_pre_info(std::string_view pre) {
  if (pre.empty()) pre = "default";
  for (const Family& f : kFamilies) {
    for (const std::string_view name : f.names) {
      if (name == pre) return {f.family, f.patterns, f.ignore_merges, f.add_bos, true};
    }
  }
  const Family& gpt2 = kFamilies[1];
  return {gpt2.family, gpt2.patterns, gpt2.ignore_merges, gpt2.add_bos, false};
}

std::span<const std::string_view> bpe_pre_names() {
  static const std::vector<std::string_view> names = all_names();
  return names;
}

std::string expand_whitespace_classes(std::string_view p) {
  std::string out;
  out.reserve(p.size() + 64);
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      ++i;
      if (e == 's') {
        if (in_class) {
          out += kWhiteSpace;
        } else {
          out += '[';
          out += kWhiteSpace;
          out += ']';
        }
      } else if (e == 'S') {
        if (in_class) fail("pre-tokenizer pattern: \\S inside a character class is not supported");
        out += "[^";
        out += kWhiteSpace;
        out += ']';
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal member.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

struct PreTokenizer::Impl {
  std::vector<pcre2_code*> codes;
  bool jit = true;

  ~Impl() {
    for (pcre2_code* c : codes) pcre2_code_free(c);
  }

  // Cuts text[begin, end) with regex `stage` and hands each piece to the next stage.
  void apply(size_t stage, std::string_view text, size_t begin, size_t end, PieceFn out,
             void* ctx) const {
    if (stage == codes.size()) {
      out(ctx, begin, end - begin);
      return;
    }
    const pcre2_code* code = codes[stage];
    ThreadState& ts = thread_state();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + begin);
    const size_t len = end - begin;
    size_t emitted = 0;  // end of what has been handed on
    size_t search = 0;   // where the next match may start
    while (search < len) {
      const int rc =
          jit ? pcre2_jit_match(code, subject, len, search, 0, ts.md, ts.ctx)
              : pcre2_match(code, subject, len, search, PCRE2_NO_UTF_CHECK, ts.md, ts.ctx);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        if (!g_warned_match_error.exchange(true)) {
          PCRE2_UCHAR msg[256];
          pcre2_get_error_message(rc, msg, sizeof msg);
          log::warn("pre-tokenizer: regex match failed ({}); the rest of the piece stays uncut",
                    reinterpret_cast<const char*>(msg));
        }
        break;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ts.md);
      const size_t ms = ov[0];
      const size_t me = ov[1];
      if (me <= ms) {  // an empty match: no piece; look again one character further
        if (ms >= len) break;
        search = ms + std::max<size_t>(1, utf8_char_len(text, begin + ms));
        continue;
      }
      if (ms > emitted) apply(stage + 1, text, begin + emitted, begin + ms, out, ctx);
      apply(stage + 1, text, begin + ms, begin + me, out, ctx);
      emitted = search = me;
    }
    if (emitted < len) apply(stage + 1, text, begin + emitted, end, out, ctx);
  }
};

PreTokenizer::PreTokenizer(std::span<const std::string_view> patterns)
    : impl_(std::make_unique<Impl>()) {
  for (const std::string_view pattern : patterns) {
    const std::string expanded = expand_whitespace_classes(pattern);
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(expanded.data()), expanded.size(),
                                     PCRE2_UTF | PCRE2_UCP, &err, &err_offset, nullptr);
    if (!code) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof msg);
      fail("pre-tokenizer pattern '{}' does not compile at offset {}: {}", pattern, err_offset,
           reinterpret_cast<const char*>(msg));
    }
    impl_->codes.push_back(code);
    if (pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) != 0) impl_->jit = false;
  }
  if (!impl_->jit) log::debug("pre-tokenizer: PCRE2 JIT unavailable, using the interpreter");
}

PreTokenizer::~PreTokenizer() = default;
PreTokenizer::PreTokenizer(PreTokenizer&&) noexcept = default;
PreTokenizer& PreTokenizer::operator=(PreTokenizer&&) noexcept = default;

bool PreTokenizer::jit() const {
  return impl_->jit;
}

void PreTokenizer::split(std::string_view text, PieceFn fn, void* ctx) const {
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    // A maximal run of well-formed characters goes through the regexes...
    size_t j = i;
    while (j < n) {
      if (static_cast<unsigned char>(text[j]) < 0x80) {
        ++j;
        continue;
      }
      const size_t len = utf8_char_len(text, j);
      if (len == 0) break;
      j += len;
    }
    if (j > i) impl_->apply(0, text, i, j, fn, ctx);
    // ...and a maximal run of bytes that are not is one piece of its own.
    size_t k = j;
    while (k < n && static_cast<unsigned char>(text[k]) >= 0x80 && utf8_char_len(text, k) == 0) {
      ++k;
    }
    if (k > j) fn(ctx, j, k - j);
    i = k;
  }
}

void PreTokenizer::split(std::string_view text, std::vector<TextSpan>& out) const {
  for_each_piece(text, [&](size_t offset, size_t length) { out.push_back({offset, length}); });
}

std::vector<std::string> PreTokenizer::split(std::string_view text) const {
  std::vector<TextSpan> spans;
  split(text, spans);
  std::vector<std::string> out;
  out.reserve(spans.size());
  for (const TextSpan& s : spans) out.emplace_back(text.substr(s.offset, s.length));
  return out;
}

}  // namespace hearth
