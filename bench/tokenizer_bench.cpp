// Tokenization throughput on ~1 MB of deterministic mixed English / code / CJK text, one core.
//
//   tokenizer_bench [--mb N] [--iters N] [--no-cache] [VOCAB.gguf ...]
//
// Without vocabularies it runs the Qwen3 and Llama 3 ones from $HEARTH_SHARED_DIR (default
// ../shared)/tokenizers. For each it reports the first pass over the text (cold word cache),
// then the best and median of --iters further passes (warm cache), and the same with the word
// cache disabled, and the English-only / code-only / CJK-only figures (0.3 MB each); MB/s counts
// input bytes (1 MB = 10^6 bytes) per second of this thread's CPU
// time (the cost on one core, robust to other load on the machine), with wall-clock figures
// beside them.
#include <fmt/format.h>

#include <time.h>
#include <algorithm>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/reader.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace {

using Clock = std::chrono::steady_clock;

// xorshift64*: the same text on every machine and run.
struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[below(v.size())];
  }
};

const std::vector<std::string> kWords = {
    "the",         "of",           "and",        "to",        "in",
    "is",          "was",          "that",       "for",       "on",
    "with",        "as",           "by",         "at",        "from",
    "this",        "have",         "not",        "but",       "they",
    "which",       "one",          "you",        "were",      "all",
    "we",          "when",         "there",      "can",       "an",
    "their",       "has",          "more",       "if",        "will",
    "would",       "about",        "time",       "people",    "into",
    "year",        "could",        "between",    "system",    "model",
    "language",    "conversation", "history",    "memory",    "server",
    "request",     "response",     "token",      "cache",     "prefix",
    "context",     "weather",      "mountain",   "river",     "village",
    "library",     "kitchen",      "garden",     "quickly",   "slowly",
    "carefully",   "beautiful",    "important",  "different", "available",
    "understand",  "remember",     "consider",   "develop",   "experience",
    "government",  "information",  "don't",      "it's",      "we're",
    "they've",     "I'll",         "she'd",      "you're",    "internationalization",
    "Springfield", "Kubernetes",   "PostgreSQL", "Wednesday", "Zürich",
    "naïve",       "café",         "résumé",     "São",       "Paulo",
    "Ångström",    "façade"};

const std::vector<std::string> kIdents = {
    "i",           "n",        "count",     "buffer",    "result", "values",
    "token_ids",   "kv_cache", "numBlocks", "maxLength", "self",   "config",
    "tensor",      "weights",  "offset",    "scores",    "logits", "tokenizer",
    "std::vector", "size_t",   "uint32_t",  "HashMap",   "Option", "callback"};

const std::vector<std::string> kCodeTemplates = {
    "for (size_t {a} = 0; {a} < {b}.size(); ++{a}) {{\n",
    "    {a} += {b}[{a}] * {n}.{m};\n",
    "if ({a} == nullptr || {b} >= {n}) return -{m};\n",
    "}}\n",
    "def {a}_{b}(self, {a}, {b}={n}):\n",
    "        return [{a} for {a} in {b} if {a} % {n} == 0]\n",
    "const auto& {a} = {b}.at(\"{a}\");  // {n} entries\n",
    "\t{a}->{b} = std::make_unique<{a}>({n}, {m});\n",
    "# TODO({a}): handle the {b} case, see issue #{n}\n",
    "    {a} = {{\"{b}\": {n}, \"{a}\": [{m}, {n}, {m}]}}\n",
    "fn {a}(&mut self, {b}: usize) -> Result<{a}, Error> {{\n",
    "SELECT {a}, COUNT(*) FROM {b} WHERE id > {n} GROUP BY {a};\n",
    "<div class=\"{a}-{b}\">{n}</div>\n"};

// Common hanzi, hiragana/katakana and hangul syllables.
const std::vector<std::string> kHanzi = {
    "的", "一", "是", "不", "了", "人", "我", "在", "有", "他", "这", "中", "大", "来", "上",
    "国", "个", "到", "说", "们", "为", "子", "和", "你", "地", "出", "道", "也", "时", "年",
    "得", "就", "那", "要", "下", "以", "生", "会", "自", "着", "去", "之", "过", "家", "学",
    "对", "可", "她", "里", "后", "小", "么", "心", "多", "天", "而", "能", "好", "都", "然",
    "没", "日", "于", "起", "还", "发", "成", "事", "只", "作", "当", "想", "看", "文", "无",
    "开", "手", "十", "用", "主", "行", "方", "又", "如", "前", "所", "本", "见", "经", "头",
    "模", "型", "语", "言", "服", "务", "器", "缓", "存", "词"};
const std::vector<std::string> kKana = {"の", "に", "は", "を", "た", "が", "で", "て", "と",
                                        "し", "れ", "さ", "あ", "い", "う", "え", "お", "か",
                                        "キ", "ャ", "ッ", "シ", "ュ", "サ", "ー", "バ", "ト"};
const std::vector<std::string> kHangul = {"한", "국", "어", "는", "이", "다", "에", "서", "의",
                                          "을", "를", "하", "고", "있", "습", "니", "대", "화"};
const std::vector<std::string> kEmoji = {"😀", "🚀", "🦙", "✅", "🎉", "❤️", "👍🏽"};

// Pronounceable made-up words, so that the text has a realistic long tail of rare words (a
// small closed vocabulary would make the word cache look better than it is on real text).
const std::vector<std::string> kOnsets = {
    "b", "c",  "d",  "f",  "g",  "h",  "k",  "l",  "m",  "n",   "p",  "r",  "s",  "t",  "v",
    "w", "br", "ch", "cl", "dr", "gr", "pl", "sh", "st", "str", "th", "tr", "qu", "sp", "fl"};
const std::vector<std::string> kVowels = {"a", "e", "i", "o", "u", "ai", "ea", "ou", "io", "y"};
const std::vector<std::string> kCodas = {"",   "",   "n",  "r",    "s",    "t",    "l",   "m",
                                         "nd", "st", "ng", "tion", "ment", "ness", "ity", "ous"};

std::string pseudo_word(Rng& r) {
  std::string w;
  const size_t syllables = 1 + r.below(4);
  for (size_t i = 0; i < syllables; ++i) w += r.pick(kOnsets) + r.pick(kVowels);
  return w + r.pick(kCodas);
}

std::string word(Rng& r) {
  return r.below(10) < 7 ? r.pick(kWords) : pseudo_word(r);
}

std::string identifier(Rng& r) {
  if (r.below(2) == 0) return r.pick(kIdents);
  std::string a = pseudo_word(r), b = pseudo_word(r);
  if (r.below(2) == 0) return a + "_" + b;
  b[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(b[0])));
  return a + b;
}

void english(Rng& r, std::string& out) {
  const size_t sentences = 2 + r.below(5);
  for (size_t s = 0; s < sentences; ++s) {
    const size_t n = 5 + r.below(18);
    for (size_t i = 0; i < n; ++i) {
      std::string w = word(r);
      if (i == 0) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
      out += w;
      if (r.below(25) == 0) out += fmt::format(" {}", 1900 + r.below(130));
      if (i + 1 < n) out += r.below(9) == 0 ? ", " : " ";
    }
    out += r.below(8) == 0 ? "?" : (r.below(12) == 0 ? "!" : ".");
    if (r.below(30) == 0) out += " " + r.pick(kEmoji);
    out += s + 1 < sentences ? " " : "\n\n";
  }
}

void code(Rng& r, std::string& out) {
  const size_t lines = 3 + r.below(10);
  for (size_t l = 0; l < lines; ++l) {
    std::string line = r.pick(kCodeTemplates);
    auto replace = [&](std::string_view key, const std::string& value) {
      for (size_t pos; (pos = line.find(key)) != std::string::npos;)
        line.replace(pos, key.size(), value);
    };
    replace("{a}", identifier(r));
    replace("{b}", identifier(r));
    replace("{n}", std::to_string(r.below(100000)));
    replace("{m}", std::to_string(r.below(1000)));
    replace("{{", "{");
    replace("}}", "}");
    out += line;
  }
  out += "\n";
}

void cjk(Rng& r, std::string& out) {
  const size_t sentences = 1 + r.below(4);
  for (size_t s = 0; s < sentences; ++s) {
    const size_t kind = r.below(4);
    const size_t n = 8 + r.below(30);
    for (size_t i = 0; i < n; ++i) {
      if (kind <= 1) {
        if (r.below(5) == 0) {  // any CJK unified ideograph
          const uint32_t cp = 0x4E00 + static_cast<uint32_t>(r.below(0x9FA5 - 0x4E00));
          out += static_cast<char>(0xE0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
          out += r.pick(kHanzi);
        }
      } else if (kind == 2) {
        out += r.below(3) == 0 ? r.pick(kHanzi) : r.pick(kKana);
      } else {
        out += r.pick(kHangul);
        if (r.below(4) == 0) out += " ";
      }
      if (r.below(12) == 0) out += kind <= 1 ? "，" : "、";
      if (r.below(40) == 0) out += "AI";
    }
    out += "。";
  }
  out += "\n";
}

// `mix`: percentages of English and code (the rest is CJK).
std::string make_text(size_t bytes, size_t english_pct = 45, size_t code_pct = 35) {
  Rng r{0x9E3779B97F4A7C15ull};
  std::string out;
  out.reserve(bytes + 4096);
  while (out.size() < bytes) {
    const size_t k = r.below(100);
    if (k < english_pct) {
      english(r, out);
    } else if (k < english_pct + code_pct) {
      code(r, out);
    } else {
      cjk(r, out);
    }
  }
  // Cut at a character boundary.
  size_t end = bytes;
  while (end > 0 && (static_cast<unsigned char>(out[end]) & 0xC0) == 0x80) --end;
  out.resize(end);
  return out;
}

struct Pass {
  double seconds;  // CPU time of this thread: what one core spends, whatever else runs
  double wall;
  size_t tokens;
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

Pass run_once(const hearth::Tokenizer& tok, const std::string& text) {
  const double c0 = thread_cpu_seconds();
  const auto t0 = Clock::now();
  const auto ids = tok.encode(text, /*add_special=*/false, /*parse_special=*/false);
  const auto t1 = Clock::now();
  const double c1 = thread_cpu_seconds();
  return {c1 - c0, std::chrono::duration<double>(t1 - t0).count(), ids.size()};
}

struct Part {
  const char* name;
  std::string text;
};

void bench(const std::string& path, const std::string& text, const std::vector<Part>& parts,
           int iters, bool with_cache_off) {
  const hearth::gguf::File file = hearth::gguf::File::open(path);
  const double mb = static_cast<double>(text.size()) / 1e6;
  auto report = [&](const char* label, const hearth::Tokenizer& tok) {
    const Pass first = run_once(tok, text);
    std::vector<double> times, walls;
    for (int i = 0; i < iters; ++i) {
      const Pass p = run_once(tok, text);
      times.push_back(p.seconds);
      walls.push_back(p.wall);
    }
    std::sort(times.begin(), times.end());
    std::sort(walls.begin(), walls.end());
    const double best = times.front();
    const double median = times[times.size() / 2];
    fmt::print(
        "  {:<10} first pass {:7.2f} MB/s   best {:7.2f} MB/s   median {:7.2f} MB/s   "
        "({} tokens, {:.2f} bytes/token)\n",
        label, mb / first.seconds, mb / best, mb / median, first.tokens,
        static_cast<double>(text.size()) / static_cast<double>(first.tokens));
    fmt::print("  {:<10} wall clock: first pass {:7.2f} MB/s   median {:7.2f} MB/s\n", "",
               mb / first.wall, mb / walls[walls.size() / 2]);
    if (tok.bpe() && tok.bpe()->cache_stats().hits + tok.bpe()->cache_stats().misses > 0) {
      const auto st = tok.bpe()->cache_stats();
      fmt::print("  {:<10} word cache: {} entries, hit rate {:.1f}%\n", "", st.entries,
                 100.0 * static_cast<double>(st.hits) / static_cast<double>(st.hits + st.misses));
    }
  };
  const auto t0 = Clock::now();
  const hearth::Tokenizer tok = hearth::Tokenizer::from_gguf(file);
  const double load = std::chrono::duration<double>(Clock::now() - t0).count();
  fmt::print("{}\n  vocab {} tokens, model '{}', pre '{}', loaded in {:.0f} ms\n", path,
             tok.n_vocab(), tok.vocab().model(), tok.vocab().pre(), load * 1e3);
  report("cache on", tok);
  // By kind of text (first pass, then the median of the timed passes; cache on).
  for (const Part& p : parts) {
    const double pmb = static_cast<double>(p.text.size()) / 1e6;
    const Pass first = run_once(tok, p.text);
    std::vector<double> times;
    for (int i = 0; i < iters; ++i) times.push_back(run_once(tok, p.text).seconds);
    std::sort(times.begin(), times.end());
    fmt::print("  {:<10} first pass {:7.2f} MB/s   median {:7.2f} MB/s   ({:.2f} bytes/token)\n",
               p.name, pmb / first.seconds, pmb / times[times.size() / 2],
               static_cast<double>(p.text.size()) / static_cast<double>(first.tokens));
  }
  if (with_cache_off && tok.bpe()) {
    const hearth::Tokenizer nocache =
        hearth::Tokenizer::from_vocab(hearth::Vocab::from_gguf(file), {.cache_entries = 0});
    report("cache off", nocache);
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t mb = 1;
  int iters = 5;
  bool cache_off = true;
  std::vector<std::string> vocabs;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--mb" && i + 1 < argc) {
      mb = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--iters" && i + 1 < argc) {
      iters = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--no-cache-off") {
      cache_off = false;
    } else if (a == "-h" || a == "--help") {
      fmt::print("usage: tokenizer_bench [--mb N] [--iters N] [--no-cache-off] [VOCAB.gguf ...]\n");
      return 0;
    } else {
      vocabs.emplace_back(a);
    }
  }
  if (vocabs.empty()) {
    const char* env = std::getenv("HEARTH_SHARED_DIR");
    const std::string dir = (env && *env) ? env : HEARTH_SHARED_DIR_DEFAULT;
    vocabs = {dir + "/tokenizers/vocab-qwen3.gguf", dir + "/tokenizers/vocab-llama3.gguf"};
  }
  const std::string text = make_text(mb * 1000 * 1000);
  std::vector<Part> parts = {{"english", make_text(mb * 300 * 1000, 100, 0)},
                             {"code", make_text(mb * 300 * 1000, 0, 100)},
                             {"cjk", make_text(mb * 300 * 1000, 0, 0)}};
  fmt::print("text: {} bytes of mixed English / code / CJK (valid UTF-8: {}), {} timed passes\n\n",
             text.size(), hearth::utf8_is_valid(text) ? "yes" : "no", iters);
  try {
    for (const std::string& v : vocabs) bench(v, text, parts, iters, cache_off);
  } catch (const hearth::Error& e) {
    fmt::print(stderr, "tokenizer_bench: {}\n", e.what());
    return 1;
  }
  return 0;
}
