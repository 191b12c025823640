// Tokenizer time on the chat request path: turn 50 of a conversation with the real Qwen3
// vocabulary and chat template, through the prompt path as it is (chat/prompt.h: the engine
// tokenizes the prompt once; truncation "auto" tokenizes a few candidates and hands its ids on)
// and as it was (the server tokenized the whole prompt for its context check, the engine again;
// truncation "auto" re-rendered and re-tokenized once per dropped message), the old path
// replayed here. The engine's tokenization is tokenize_prompt, exactly what Engine::submit runs.
//
//   prompt_bench [--turns N] [--reps N] [--ctx N]
//
// Each repetition uses a fresh tokenizer (cold BPE word cache) and sends turns 1..N in order,
// as a client would; the figures are Tokenizer::encode's own time (EncodeStats) for the last
// turn, median over the repetitions.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "chat/prompt.h"
#include "engine/engine.h"
#include "gguf/reader.h"

namespace {

using namespace hearth;
using json = nlohmann::ordered_json;

std::string shared_dir() {
  if (const char* env = std::getenv("HEARTH_SHARED_DIR"); env && *env) return env;
  return HEARTH_SHARED_DIR_DEFAULT;
}

std::string read_all(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::string s;
  char buf[65536];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) s.append(buf, n);
  std::fclose(f);
  return s;
}

std::string words(uint64_t& seed, int n) {
  static const char* kWords[] = {"the",    "river",   "flows",  "through", "a",       "valley",
                                 "where",  "old",     "stone",  "bridges", "carry",   "people",
                                 "and",    "stories", "across", "quiet",   "evening", "light,",
                                 "while",  "engines", "hum",    "softly",  "in",      "distant",
                                 "towns.", "Why",     "does",   "it",      "matter?", "Because"};
  std::string s;
  for (int i = 0; i < n; ++i) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    if (i) s += ' ';
    s += kWords[(seed >> 33) % (sizeof kWords / sizeof *kWords)];
  }
  return s;
}

// Messages of turn `t` (1-based): the system prompt, t-1 exchanges, the t-th question.
json conversation(int t) {
  uint64_t seed = 42;
  json m = json::array({{{"role", "system"}, {"content", "You are a helpful assistant."}}});
  for (int i = 1; i <= t; ++i) {
    m.push_back({{"role", "user"}, {"content", words(seed, 40)}});
    std::string reply = words(seed, 80);
    if (i < t) m.push_back({{"role", "assistant"}, {"content", reply}});
  }
  return m;
}

struct Path {
  const char* name;
  bool old;
  bool truncate;
};

// One request's tokenizer work; returns the prompt's token count.
size_t request(const Path& p, const chat::PromptBuilder& b, const Tokenizer& tok,
               const chat::PromptInput& in, int64_t budget) {
  if (!p.old) {
    if (!p.truncate) return tokenize_prompt(tok, b.render(in).text).size();  // the engine
    chat::ChatPrompt c = b.render_within(in, budget);
    return c.text.tokens.size();  // the engine takes these ids as they are
  }
  // As it was: the server tokenized every candidate in full, then the engine once more.
  chat::PromptInput cur = in;
  TextPrompt text = b.render(cur).text;
  std::vector<int32_t> ids = tokenize_prompt(tok, text);
  while (p.truncate && static_cast<int64_t>(ids.size()) > budget) {
    size_t victim = cur.messages.size();
    for (size_t i = 0; i + 1 < cur.messages.size(); ++i)
      if (cur.messages[i]["role"] != "system") {
        victim = i;
        break;
      }
    if (victim == cur.messages.size()) break;
    cur.messages.erase(cur.messages.begin() + static_cast<std::ptrdiff_t>(victim));
    text = b.render(cur).text;
    ids = tokenize_prompt(tok, text);
  }
  return tokenize_prompt(tok, text).size();  // the engine's own tokenization
}

}  // namespace

int main(int argc, char** argv) {
  int turns = 50, reps = 7;
  int64_t n_ctx = 2048, reserve = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--turns")) turns = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--ctx")) n_ctx = std::atoll(argv[i + 1]);
  }
  const std::string dir = shared_dir();
  const std::string vocab = dir + "/tokenizers/vocab-qwen3.gguf";
  std::string tmpl;
  try {
    tmpl = read_all(dir + "/templates/templates/Qwen-Qwen3-0.6B.jinja");
  } catch (const std::exception& e) {
    fmt::print(stderr, "prompt_bench: {} (set HEARTH_SHARED_DIR)\n", e.what());
    return 1;
  }
  fmt::print(
      "prompt_bench: turn {} of a chat, Qwen3 vocabulary + template; truncation budget "
      "{} tokens ({} context - {} reply); median of {} runs, each a fresh tokenizer sent turns "
      "1..N\n",
      turns, n_ctx - reserve, n_ctx, reserve, reps);
  const Path paths[] = {{"before, truncation off", true, false},
                        {"after,  truncation off", false, false},
                        {"before, truncation auto", true, true},
                        {"after,  truncation auto", false, true}};
  for (const Path& p : paths) {
    std::vector<double> ms;
    EncodeStats last{};
    size_t n_tokens = 0;
    for (int r = 0; r < reps; ++r) {
      const gguf::File file = gguf::File::open(vocab);
      const Tokenizer tok = Tokenizer::from_gguf(file);
      const chat::ChatFormatter f(tmpl, "", tok.token_to_piece(tok.eos(), true));
      const chat::PromptBuilder b(f, tok);
      for (int t = 1; t <= turns; ++t) {
        chat::PromptInput in;
        in.messages = conversation(t);
        const EncodeStats before = tok.encode_stats();
        n_tokens = request(p, b, tok, in, n_ctx - reserve);
        const EncodeStats after = tok.encode_stats();
        if (t == turns) {
          last = {after.calls - before.calls, after.bytes - before.bytes,
                  after.nanoseconds - before.nanoseconds};
          ms.push_back(static_cast<double>(last.nanoseconds) / 1e6);
        }
      }
    }
    std::sort(ms.begin(), ms.end());
    fmt::print("  {:<24} encode: {:8.3f} ms  ({} calls, {} bytes; prompt {} tokens)\n", p.name,
               ms[ms.size() / 2], last.calls, last.bytes, n_tokens);
  }
  return 0;
}
