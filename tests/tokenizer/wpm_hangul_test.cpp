// WordPiece on Hangul, checked against BERT's BasicTokenizer rules rather than sample strings:
// lower-casing comes with NFD + removal of non-spacing marks (Mn), and NFD takes every Hangul
// syllable apart into its conjoining jamo (U+1100 leading, U+1161 vowel, U+11A8 trailing
// consonant), which are letters (Lo) and stay. Hangul is not in BERT's CJK ranges, so it is
// not isolated like an ideograph: it stays inside its word; whitespace, punctuation and
// control characters act on it as on any letter. The jamo of a syllable come from Unicode's
// arithmetic (ch. 3.12), independent of the normalization library under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer/wpm.h"

namespace hearth {
namespace {

using Words = std::vector<std::string>;
using Ids = std::vector<TokenId>;
using test::escaped;
using test::ids_str;

constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kVCount = 21, kTCount = 28, kSCount = 19 * kVCount * kTCount;  // 11172

std::string utf8(char32_t c) {
  std::string s;
  if (c < 0x80) {
    s += static_cast<char>(c);
  } else if (c < 0x800) {
    s += static_cast<char>(0xC0 | (c >> 6));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    s += static_cast<char>(0xE0 | (c >> 12));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (c >> 18));
    s += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (c & 0x3F));
  }
  return s;
}

// The conjoining jamo of syllable number `s` (0 .. kSCount-1): leading, vowel, and the
// trailing consonant when the syllable has one.
struct Jamo {
  char32_t l, v, t;  // t == 0: no final consonant
};
Jamo jamo_of(char32_t s) {
  const char32_t t = s % kTCount;
  return {kLBase + s / (kVCount * kTCount), kVBase + (s % (kVCount * kTCount)) / kTCount,
          t ? kTBase + t : 0};
}
std::string nfd(char32_t s) {
  const Jamo j = jamo_of(s);
  return utf8(j.l) + utf8(j.v) + (j.t ? utf8(j.t) : "");
}
std::string syllable(char32_t s) {
  return utf8(kSBase + s);
}

// Syllables spread over the whole block, with and without a final consonant.
std::vector<char32_t> sample_syllables() {
  std::vector<char32_t> out;
  for (char32_t s = 0; s < kSCount; s += 101) out.push_back(s);                // mixed finals
  for (char32_t s = 0; s < kSCount; s += kTCount * 37) out.push_back(s);       // no final
  for (char32_t s = 27; s < kSCount; s += kTCount * 41 + 1) out.push_back(s);  // finals
  return out;
}

Vocab minimal_wpm() {
  VocabData d;
  d.model = "bert";
  d.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
  d.types = {3, 3, 3, 3};
  d.unk_id = 1;
  return Vocab::build(d);
}

TEST(WpmHangul, EverySyllableDecomposesIntoItsJamo) {
  const WpmModel m(std::make_shared<const Vocab>(minimal_wpm()));
  size_t with_final = 0;
  for (char32_t s = 0; s < kSCount; ++s) {
    const Words got = m.words(syllable(s));
    ASSERT_EQ(got, Words{nfd(s)}) << "syllable U+" << std::hex << (kSBase + s);
    with_final += jamo_of(s).t != 0;
  }
  EXPECT_EQ(with_final, kSCount / kTCount * (kTCount - 1));
}

TEST(WpmHangul, MixedTextSplitsAsForAnyLetter) {
  const WpmModel m(std::make_shared<const Vocab>(minimal_wpm()));
  const std::string ideograph = "\xE4\xB8\xAD";        // U+4E2D, a CJK ideograph
  const std::string acute = "\xCC\x81";                // U+0301 COMBINING ACUTE (Mn)
  const std::string ideo_space = "\xE3\x80\x80";       // U+3000 IDEOGRAPHIC SPACE
  const std::string compat_kieuk = "\xE3\x85\x8B";     // U+314B, compatibility jamo: not NFD'd
  const std::string fullwidth_comma = "\xEF\xBC\x8C";  // U+FF0C (Po)
  for (const char32_t s : sample_syllables()) {
    SCOPED_TRACE(escaped(syllable(s)));
    const std::string h = syllable(s), j = nfd(s);
    EXPECT_EQ(m.words("X" + h + "y"), (Words{"x" + j + "y"}));  // one word, Latin lower-cased
    EXPECT_EQ(m.words(h + h), (Words{j + j}));
    EXPECT_EQ(m.words(h + "," + h), (Words{j, ",", j}));
    EXPECT_EQ(m.words(h + fullwidth_comma + h + "!"), (Words{j, fullwidth_comma, j, "!"}));
    EXPECT_EQ(m.words(h + ideograph + h), (Words{j, ideograph, j}));  // only the ideograph
    EXPECT_EQ(m.words(h + acute), (Words{j}));                        // the mark goes
    EXPECT_EQ(m.words(h + "\t" + h + ideo_space + h + "\n"), (Words{j, j, j}));
    EXPECT_EQ(m.words(h + "\x01" + h + "\xE2\x80\x8B" + h), (Words{j + j + j}));  // Cc, Cf go
    EXPECT_EQ(m.words(compat_kieuk + h), (Words{compat_kieuk + j}));
  }
}

// Vocabulary lookups the rule needs: the word-initial and continuation piece of one jamo.
TokenId initial(const Vocab& v, char32_t c) {
  return v.find(std::string(kSpmSpace) + utf8(c));
}
TokenId continuation(const Vocab& v, char32_t c) {
  return v.find(utf8(c));
}

// bert-bge (BERT uncased's vocabulary) has single-jamo pieces only, so a Hangul word's
// WordPiece ids follow from its jamo one by one, or the word is [UNK] when one is missing.
TEST(WpmHangul, BertBgeEncodesSyllablesAsTheirJamo) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-bert-bge.gguf");
  const Tokenizer& tok = test::load_tokenizer(path);
  const Vocab& v = tok.vocab();
  const TokenId unk = v.find("[UNK]");
  const TokenId hello = v.find(std::string(kSpmSpace) + "hello");
  ASSERT_NE(unk, kNoToken);
  ASSERT_NE(hello, kNoToken);
  size_t exact = 0, exact_final = 0;
  for (char32_t s = 0; s < kSCount; ++s) {
    const std::string h = syllable(s);
    const Ids got = tok.encode(h, false, false);
    // Canonical equivalence: the precomposed syllable and its jamo tokenize the same.
    ASSERT_EQ(got, tok.encode(nfd(s), false, false)) << escaped(h);
    const Jamo j = jamo_of(s);
    Ids want = {initial(v, j.l), continuation(v, j.v)};
    Ids after_hello = {hello, continuation(v, j.l), continuation(v, j.v)};
    if (j.t) {
      want.push_back(continuation(v, j.t));
      after_hello.push_back(continuation(v, j.t));
    }
    const bool known = std::find(want.begin(), want.end(), kNoToken) == want.end();
    if (!known) want = {unk};
    ASSERT_EQ(got, want) << escaped(h) << " -> " << ids_str(got);
    if (known && std::find(after_hello.begin(), after_hello.end(), kNoToken) == after_hello.end()) {
      ASSERT_EQ(tok.encode("Hello" + h, false, false), after_hello) << escaped(h);
    }
    exact += known;
    exact_final += known && j.t;
  }
  // The check above must not be all [UNK]: many syllables, with and without a final, have all
  // their jamo in the vocabulary.
  EXPECT_GT(exact, 1000u);
  EXPECT_GT(exact_final, 500u);
  std::printf("[  hangul  ] bert-bge: %zu of %u syllables map to jamo pieces (%zu with a final)\n",
              exact, static_cast<unsigned>(kSCount), exact_final);
}

// The 100-character word limit counts the normalized (decomposed) characters, as HF WordPiece
// does: 50 two-jamo syllables still tokenize, 51 are one [UNK].
TEST(WpmHangul, WordLimitCountsJamo) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-bert-bge.gguf");
  const Tokenizer& tok = test::load_tokenizer(path);
  const TokenId unk = tok.vocab().find("[UNK]");
  const std::string ga = syllable(0);  // U+AC00: leading + vowel, no final
  std::string word;
  for (size_t i = 0; i < WpmModel::kMaxWordChars / 2; ++i) word += ga;
  const Ids fits = tok.encode(word, false, false);
  EXPECT_EQ(fits.size(), WpmModel::kMaxWordChars) << ids_str(fits);
  EXPECT_EQ(tok.encode(word + ga, false, false), (Ids{unk}));
}

}  // namespace
}  // namespace hearth
