// The token mask of a grammar: the trie walk (GrammarMasker::fill) and the one-token check
// against a brute-force reference (every token: copy the matcher, feed it the token's piece)
// on a synthetic vocabulary of a few thousand pieces (structured JSON pieces, every single
// byte, random text, random bytes, UTF-8 characters and their fragments, duplicates, end
// tokens), in many grammar states, with a roomy cache and with one so small it is emptied
// all the time. Also: the walk skips what the grammar rejects, and end tokens follow can_end.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_masker.h"
#include "sampling/grammar_matcher.h"
#include "sampling/grammar_test_util.h"
#include "sampling/token_trie.h"

namespace hearth {
namespace {

using test::compile;

struct Vocab {
  std::vector<std::string> pieces;
  std::vector<int32_t> end_tokens;
};

std::string random_utf8_char(std::mt19937& rng) {
  static const std::vector<std::string> chars = {
      "é", "ü", "ß", "日", "本", "語", "ひ", "カ", "😀", "🚀", "а", "中", "\xEF\xBF\xBF", "\u00A0"};
  return chars[rng() % chars.size()];
}

Vocab synthetic_vocab(size_t n_random, uint32_t seed) {
  Vocab v;
  v.pieces = {"",        "{",     "}",        "[",        "]",        ",",        ":",    "\"",
              " ",       "  ",    "\n",       "\t",       "{\"",      "\":",      "\": ", ", \"",
              "\"}",     "\"]",   "\"}]",     "true",     "false",    "null",     "tr",   "ue",
              "nu",      "ll",    "fal",      "se",       "0",        "1",        "12",   "123",
              "-",       "-1",    ".",        ".5",       "e",        "E+",       "e-",   "\\",
              "\\\"",    "\\n",   "\\u",      "\\u00",    "e9",       "00e9",     "a",    "ab",
              "abc",     "hello", " world",   "é",        "日",       "本",       "日本", "😀",
              "\xC3",    "\xA9",  "\xE6\x97", "\xA5",     "\xF0\x9F", "\x98\x80", "\xFF", "\x80",
              "{\"a\":", "[1,",   "yes",      "no",       "y",        "ab!",      "! 1",  " 12",
              "a",       "a",     "\"a",      "\xED\xA0", "\xC0",     "\xF4\x90"};
  for (int b = 1; b < 256; ++b) v.pieces.push_back(std::string(1, static_cast<char>(b)));
  std::mt19937 rng(seed);
  const std::string json_chars = "{}[],:\" \n\\0123456789.-+eEtruefalsn abcxyz!";
  for (size_t i = 0; i < n_random; ++i) {
    std::string p;
    const size_t len = 1 + rng() % 8;
    const uint32_t kind = rng() % 4;
    while (p.size() < len) {
      if (kind == 0)
        p += json_chars[rng() % json_chars.size()];
      else if (kind == 1)
        p += static_cast<char>(rng() % 256);
      else if (kind == 2)
        p += random_utf8_char(rng);
      else
        p += static_cast<char>('a' + rng() % 3);
    }
    if (kind == 2 && rng() % 3 == 0) p.pop_back();  // a piece that ends mid-character
    v.pieces.push_back(p);
  }
  v.pieces.push_back("");  // end tokens: one special (empty), one with text
  v.pieces.push_back("</s>");
  v.end_tokens = {static_cast<int32_t>(v.pieces.size() - 2),
                  static_cast<int32_t>(v.pieces.size() - 1)};
  return v;
}

// The reference: every token on its own copy of the matcher.
std::vector<bool> brute_force(const GrammarMatcher& m, const Vocab& v) {
  std::vector<bool> allowed(v.pieces.size(), false);
  for (size_t t = 0; t < v.pieces.size(); ++t) {
    if (std::find(v.end_tokens.begin(), v.end_tokens.end(), static_cast<int32_t>(t)) !=
        v.end_tokens.end()) {
      allowed[t] = m.can_end();
    } else if (!v.pieces[t].empty()) {
      GrammarMatcher copy = m;
      allowed[t] = copy.accept_bytes(v.pieces[t]);
    }
  }
  return allowed;
}

void expect_masks_match(GrammarMasker& masker, const GrammarMatcher& m, const Vocab& v,
                        const std::string& what) {
  const std::vector<bool> want = brute_force(m, v);
  TokenMask got;
  masker.fill(m, got);
  ASSERT_EQ(got.size(), v.pieces.size());
  size_t n_allowed = 0, mismatches = 0;
  for (size_t t = 0; t < want.size(); ++t) {
    const auto id = static_cast<int32_t>(t);
    n_allowed += want[t];
    if (got.test(id) != want[t] && ++mismatches <= 5)
      ADD_FAILURE() << what << ": fill() says " << got.test(id) << " for token " << t << " '"
                    << v.pieces[t] << "'";
    if (masker.token_allowed(m, id) != want[t] && ++mismatches <= 5)
      ADD_FAILURE() << what << ": token_allowed() says " << !want[t] << " for token " << t << " '"
                    << v.pieces[t] << "'";
  }
  EXPECT_EQ(mismatches, 0u) << what;
  EXPECT_EQ(got.count(), n_allowed) << what;
  EXPECT_GT(n_allowed, 0u) << what;  // every state tested allows something
}

struct Case {
  std::string_view grammar;
  std::vector<std::string> prefixes;  // grammar states: the matcher after each
};

TEST(GrammarMask, TrieWalkMatchesBruteForce) {
  const Vocab v = synthetic_vocab(3000, 7);
  auto trie = std::make_shared<const TokenTrie>(v.pieces, v.end_tokens);
  const std::vector<Case> cases = {
      {test::kJsonGrammar,
       {"", "{", "{\"a", "{\"a\":", "{\"a\": [1", "{\"a\": \"日", "{\"a\": \"\xE6", "[1, 2]",
        "\"\\u00", "-", "tru", "{\"a\": \"x\\", "[\"\xF0\x9F\x98", " [ {} , "}},
      {"root ::= (\"yes\" | \"no\" | [a-c]{1,3} \"!\") ( \" \" [0-9]+ )?",
       {"", "y", "ab", "ab!", "ab! 1", "no"}},
      {"root ::= [^\\x00-\\x7F]{1,4}", {"", "é", "日本", "\xE6\x97"}},
      {"root ::= ( . | \"\\n\" )* \"</s>\"", {"", "abc", "</"}},
  };
  GrammarMasker roomy(trie);
  GrammarMasker cramped(trie, 2);  // its cache is emptied at nearly every new state
  for (const Case& c : cases) {
    const auto g = compile(c.grammar);
    for (const std::string& prefix : c.prefixes) {
      GrammarMatcher m(g);
      ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
      const std::string what = std::string(c.grammar.substr(0, 40)) + " after '" + prefix + "'";
      expect_masks_match(roomy, m, v, what + " (roomy cache)");
      expect_masks_match(cramped, m, v, what + " (cramped cache)");
    }
  }
  EXPECT_GT(roomy.stats().steps_computed, 0u);
  EXPECT_LE(cramped.stats().cached_states, 64u);
}

TEST(GrammarMask, RepeatedStatesReuseTheirWholeMask) {
  const Vocab v = synthetic_vocab(3000, 11);
  auto trie = std::make_shared<const TokenTrie>(v.pieces, v.end_tokens);
  const auto g = compile(test::kJsonGrammar);
  GrammarMasker masker(trie);
  // Each character of a string starts from the same state; a pending UTF-8 character does not
  // (its mask is walked every time), and neither does a new state.
  const std::vector<std::pair<std::string, bool>> steps = {
      {"{\"a\": \"", false},        {"{\"a\": \"x", true},       {"{\"a\": \"xy", true},
      {"{\"a\": \"xy\xE6", false},  {"{\"a\": \"xy\xE6", false}, {"{\"a\": \"xy\", \"", false},
      {"{\"a\": \"xy\", \"b", true}};
  for (const auto& [prefix, from_cache] : steps) {
    GrammarMatcher m(g);
    ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
    expect_masks_match(masker, m, v, "after '" + prefix + "'");
    EXPECT_EQ(masker.stats().mask_from_cache, from_cache) << prefix;
  }
}

TEST(GrammarMask, EndTokensOnlyWhenTheGrammarCanEnd) {
  const Vocab v = synthetic_vocab(100, 3);
  auto trie = std::make_shared<const TokenTrie>(v.pieces, v.end_tokens);
  GrammarMasker masker(trie);
  const auto g = compile("root ::= \"ab\" \"c\"?");
  GrammarMatcher m(g);
  TokenMask mask;
  for (const char* step : {"", "a", "b", "c"}) {
    ASSERT_TRUE(m.accept_bytes(step));
    masker.fill(m, mask);
    for (int32_t t : v.end_tokens) {
      EXPECT_EQ(mask.test(t), m.can_end()) << "after " << step;
      EXPECT_EQ(masker.token_allowed(m, t), m.can_end()) << "after " << step;
    }
  }
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(mask.count(), v.end_tokens.size());  // after "abc" only the end is left
  // The empty piece (a special token that is not an end token) is never allowed.
  EXPECT_FALSE(masker.token_allowed(GrammarMatcher(compile("root ::= .*")), 0));
  GrammarMatcher dead(g);
  EXPECT_FALSE(dead.accept_bytes("x"));
  masker.fill(dead, mask);
  EXPECT_EQ(mask.count(), 0u);
}

TEST(GrammarMask, WalkSkipsSubtreesTheGrammarRejects) {
  const Vocab v = synthetic_vocab(20000, 11);
  auto trie = std::make_shared<const TokenTrie>(v.pieces, v.end_tokens);
  ASSERT_GT(trie->nodes().size(), 30000u);
  GrammarMasker masker(trie);
  GrammarMatcher m(compile("root ::= \"yes\" | \"no\""));
  TokenMask mask;
  masker.fill(m, mask);
  // Only the root's children (one per first byte) and what lies under "y", "ye", "n" are tried.
  EXPECT_LT(masker.stats().nodes_tried, 1000u);
  EXPECT_TRUE(mask.test(
      static_cast<int32_t>(std::find(v.pieces.begin(), v.pieces.end(), "yes") - v.pieces.begin())));
  EXPECT_FALSE(mask.test(
      static_cast<int32_t>(std::find(v.pieces.begin(), v.pieces.end(), "ab") - v.pieces.begin())));
}

TEST(GrammarMask, TrieKeepsEveryPieceOnce) {
  const std::vector<std::string> pieces = {"ab", "a", "", "abc", "b", "a", "\xFF"};
  TokenTrie trie(pieces, {2});
  EXPECT_EQ(trie.n_tokens(), pieces.size());
  EXPECT_EQ(trie.max_depth(), 3u);
  std::vector<int32_t> seen;
  std::string path;
  for (size_t i = 0; i < trie.nodes().size(); ++i) {
    const auto& n = trie.nodes()[i];
    path.resize(n.depth - 1);
    path += static_cast<char>(n.byte);
    EXPECT_LE(n.subtree_end, trie.nodes().size());
    EXPECT_GT(n.subtree_end, i);
    for (int32_t t : trie.node_tokens(i)) {
      EXPECT_EQ(path, pieces[static_cast<size_t>(t)]);
      seen.push_back(t);
    }
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<int32_t>{0, 1, 3, 4, 5, 6}));  // not the empty end token
  EXPECT_EQ(trie.nodes().size(), 5u);                         // a, ab, abc, b, \xFF
  EXPECT_TRUE(trie.is_end_token(2));
  EXPECT_EQ(trie.piece(3), "abc");
}

}  // namespace
}  // namespace hearth
