#include "tokenizer/wpm.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"

namespace hearth {
namespace {

using Words = std::vector<std::string>;
using Ids = std::vector<TokenId>;

// A small WordPiece vocabulary in GGUF form: word-initial pieces carry U+2581, continuation
// pieces are bare ("##" removed).
Vocab toy_wpm() {
  VocabData d;
  d.model = "bert";
  d.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]"};
  d.types = {3, 3, 3, 3};
  for (const char* t :
       {"\xE2\x96\x81un", "aff", "able", "\xE2\x96\x81hello", "\xE2\x96\x81,", "\xE2\x96\x81!",
        "\xE2\x96\x81"
        "a",
        "pf", "el", "\xE2\x96\x81\xE4\xB8\xAD"}) {
    d.tokens.push_back(t);
    d.types.push_back(1);
  }
  d.unk_id = 1;
  d.bos_id = 2;
  d.sep_id = 3;
  d.pad_id = 0;
  return Vocab::build(d);
}

TEST(Wpm, NormalizeAndSplit) {
  const WpmModel m(std::make_shared<const Vocab>(toy_wpm()));
  EXPECT_EQ(m.words("Hello, World!"), (Words{"hello", ",", "world", "!"}));
  EXPECT_EQ(m.words("\xC3\x84pfel"), (Words{"apfel"}));  // Ä -> a (accent stripped)
  EXPECT_EQ(m.words("C\xE1\xBB\xAD"
                    "a"),
            (Words{"cua"}));  // ử: two marks stripped
  EXPECT_EQ(m.words("\xE4\xB8\xAD\xE6\x96\x87"
                    "ab"),  // CJK ideographs alone
            (Words{"\xE4\xB8\xAD", "\xE6\x96\x87", "ab"}));
  EXPECT_EQ(m.words("a\x01"
                    "b\xFF"
                    "c"),
            (Words{"abc"}));  // controls, bad bytes dropped
  EXPECT_EQ(m.words("a\tb\xE3\x80\x80"
                    "c\n"),
            (Words{"a", "b", "c"}));                                    // U+3000 is whitespace
  EXPECT_EQ(m.words("$5+x"), (Words{"$", "5", "+", "x"}));              // ASCII symbols split
  EXPECT_EQ(m.words("\xCE\xA3\xCE\x91"), (Words{"\xCF\x83\xCE\xB1"}));  // ΣΑ -> σα
  EXPECT_TRUE(m.words(" \t\n").empty());
}

TEST(Wpm, GreedyLongestMatch) {
  const Tokenizer t = Tokenizer::from_vocab(toy_wpm());
  EXPECT_EQ(t.encode("unaffable", false), (Ids{4, 5, 6}));
  EXPECT_EQ(t.encode("Hello, unaffable!", false), (Ids{7, 8, 4, 5, 6, 9}));
  EXPECT_EQ(t.encode("\xC3\x84pfel", false), (Ids{10, 11, 12}));
  EXPECT_EQ(t.encode("unaffablex", false), (Ids{1}));  // no full segmentation: [UNK]
  EXPECT_EQ(t.encode("hello zz hello", false), (Ids{7, 1, 7}));
  EXPECT_EQ(t.encode(std::string(101, 'a'), false), (Ids{1}));  // over 100 characters
  // add_special: [CLS] ... [SEP].
  EXPECT_EQ(t.encode("hello", true), (Ids{2, 7, 3}));
  EXPECT_EQ(t.encode("", true), (Ids{2, 3}));
  // Special texts: [CLS] is CONTROL, so only with parse_special.
  EXPECT_EQ(t.encode("[CLS] hello", false, true), (Ids{2, 7}));
  EXPECT_EQ(t.encode("[CLS] hello", false, false), (Ids{1, 1, 1, 7}));
  // Decoding renders word-initial pieces with a leading space (llama.cpp's WPM rendering).
  EXPECT_EQ(t.decode(Ids{4, 5, 6, 9}), " unaffable !");
}

TEST(Wpm, BertBgeDefaultsAndRandomInput) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-bert-bge.gguf");
  const Tokenizer& t = test::load_tokenizer(path);
  EXPECT_EQ(t.bos(), 101);  // [CLS] (llama.cpp's default for BERT vocabularies)
  EXPECT_EQ(t.vocab().sep(), 102);
  EXPECT_EQ(t.vocab().unk(), 100);
  EXPECT_EQ(t.encode("Hello world", true), (Ids{101, 7592, 2088, 102}));
  std::mt19937 rng(17);
  for (int iter = 0; iter < 1000; ++iter) {
    std::string s;
    for (size_t i = 0, n = rng() % 40; i < n; ++i) {
      s += rng() % 4 == 0 ? static_cast<char>(rng() % 256) : static_cast<char>('a' + rng() % 26);
      if (rng() % 9 == 0) s += " ";
    }
    const Ids ids = t.encode(s, rng() % 2, rng() % 2);
    for (const TokenId id : ids) ASSERT_TRUE(t.vocab().valid_id(id)) << test::escaped(s);
    (void)t.decode(ids);
  }
}

}  // namespace
}  // namespace hearth
