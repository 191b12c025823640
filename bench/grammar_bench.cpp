// Grammar-constrained sampling cost on a synthetic 151,936-piece vocabulary (byte-level BPE
// shaped: words with and without a leading space, numbers, punctuation, CJK, stray bytes):
// GrammarMasker::fill for a JSON grammar in several states, cold (a new masker: its cache is
// built during the walk) and warm (the same masker again), one token_allowed check, and the
// brute-force reference (every token on a copy of the matcher). Prints best and median.
//
//   grammar_bench [--reps R]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_masker.h"
#include "sampling/grammar_matcher.h"
#include "sampling/token_trie.h"

using namespace hearth;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kVocab = 151936;

constexpr std::string_view kJson = R"gbnf(
root    ::= ws value ws
value   ::= object | array | string | number | ( "true" | "false" | "null" )
object  ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
member  ::= string ws ":" ws value
array   ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
string  ::= "\"" ( [^"\\\x00-\x1F] | "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} ) )* "\""
number  ::= "-"? ( "0" | [1-9] [0-9]* ) ( "." [0-9]+ )? ( [eE] [-+]? [0-9]+ )?
ws      ::= [ \t\n\r]*
)gbnf";

std::vector<std::string> make_vocab() {
  std::mt19937 g(1);
  const auto pick = [&](std::string_view from) { return from[g() % from.size()]; };
  std::vector<std::string> v;
  v.push_back("");  // an end token, as a special
  for (int b = 0; b < 256; ++b) v.push_back(std::string(1, static_cast<char>(b)));
  while (v.size() < kVocab) {
    std::string p;
    const uint32_t kind = g() % 100;
    if (kind < 60) {  // a word piece
      if (g() % 2) p += ' ';
      const size_t len = 1 + g() % 9;
      for (size_t i = 0; i < len; ++i) p += pick("abcdefghijklmnopqrstuvwxyzeeeaaoo");
      if (g() % 8 == 0) p[p.size() > 1 && p[0] == ' ' ? 1 : 0] ^= 0x20;
    } else if (kind < 70) {  // numbers and punctuation
      const size_t len = 1 + g() % 4;
      for (size_t i = 0; i < len; ++i) p += pick("0123456789.,;:!?()[]{}\"'-_/\\=+*<>#@");
    } else if (kind < 85) {  // CJK
      const size_t len = 1 + g() % 3;
      for (size_t i = 0; i < len; ++i) {
        const uint32_t cp = 0x4E00 + g() % 0x5000;
        p += static_cast<char>(0xE0 | (cp >> 12));
        p += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        p += static_cast<char>(0x80 | (cp & 0x3F));
      }
    } else if (kind < 95) {  // byte-level fragments
      const size_t len = 1 + g() % 4;
      for (size_t i = 0; i < len; ++i) p += static_cast<char>(g() % 256);
    } else {  // whitespace and code
      static const char* code[] = {"\n",  "\n\n", "  ", "    ", "\t",   "{\"", "\":",  "\": \"",
                                   "\",", "\"}",  "},", "\n}",  "  \"", "\\n", "\\\"", "=>"};
      p = code[g() % 16];
      if (g() % 2) p += static_cast<char>('a' + g() % 26);
    }
    v.push_back(p);
  }
  return v;
}

struct Timing {
  double best = 1e30, median = 0;
};

template <typename F>
Timing time_it(int reps, F&& f) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 9;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--reps") == 0) reps = std::atoi(argv[i + 1]);

  const auto t0 = Clock::now();
  const std::vector<std::string> vocab = make_vocab();
  auto trie = std::make_shared<const TokenTrie>(vocab, std::vector<int32_t>{0});
  const double build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  std::printf("vocabulary %zu pieces, trie %zu nodes, built in %.1f ms (with the vocabulary)\n",
              vocab.size(), trie->nodes().size(), build_ms);

  const auto grammar = std::make_shared<const Grammar>(Grammar::parse(kJson));
  const std::pair<const char*, const char*> states[] = {
      {"start", ""},
      {"in a string", "{\"key\": \"some te"},
      {"after '{'", "{"},
      {"in a number", "[12"},
      {"after a key", "{\"key\""},
  };
  std::printf("%-14s %9s %12s %12s %12s %14s\n", "state", "allowed", "cold best", "warm best",
              "warm median", "nodes tried");
  for (const auto& [name, prefix] : states) {
    GrammarMatcher m(grammar);
    if (!m.accept_bytes(prefix)) return 1;
    TokenMask mask;
    const Timing cold = time_it(reps, [&] {
      GrammarMasker fresh(trie);
      fresh.fill(m, mask);
    });
    GrammarMasker warm(trie);
    warm.fill(m, mask);
    const Timing hot = time_it(reps, [&] { warm.fill(m, mask); });
    std::printf("%-14s %9zu %9.2f ms %9.2f ms %9.2f ms %7zu of %zu\n", name, mask.count(),
                cold.best, hot.best, hot.median, warm.stats().nodes_tried, trie->nodes().size());
  }

  GrammarMatcher m(grammar);
  m.accept_bytes("{\"key\": \"some te");
  GrammarMasker masker(trie);
  const int n_checks = 100000;
  size_t yes = 0;
  const Timing one = time_it(3, [&] {
    for (int i = 0; i < n_checks; ++i)
      yes += masker.token_allowed(m, static_cast<int32_t>(1 + (i * 7919) % (kVocab - 1)));
  });
  std::printf("token_allowed (in a string): %.3f us per token (%zu allowed)\n",
              one.best * 1000.0 / n_checks, yes / 3);

  const Timing brute = time_it(1, [&] {
    size_t n = 0;
    for (size_t t = 1; t < vocab.size(); ++t) {
      GrammarMatcher copy = m;
      n += copy.accept_bytes(vocab[t]);
    }
    std::printf("brute force allowed %zu; ", n);
  });
  std::printf("brute force (copy + accept_bytes per token): %.1f ms\n", brute.best);
  return 0;
}
