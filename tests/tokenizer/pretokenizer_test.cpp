#include "tokenizer/pretokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/byte_level.h"
#include "util/error.h"

namespace hearth {
namespace {

using Pieces = std::vector<std::string>;

Pieces split(std::string_view pre, std::string_view text) {
  const BpePreInfo info = bpe_pre_info(pre);
  return PreTokenizer(info.patterns).split(text);
}

// ---------------------------------------------------------------------------------------------
// The byte-level alphabet.

TEST(ByteLevel, GptTwoAlphabet) {
  EXPECT_EQ(byte_level_char(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(byte_level_char('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(byte_level_char(0), "\xC4\x80");     // U+0100
  EXPECT_EQ(byte_level_char('a'), "a");
  EXPECT_EQ(byte_level_char('!'), "!");
  EXPECT_EQ(byte_level_char(0x7F), "\xC4\xA1");  // U+0121, right after the 33 first controls
  EXPECT_EQ(byte_level_char(0xA1), "\xC2\xA1");  // '¡' stands for itself
  EXPECT_EQ(byte_level_char(0xAD), "\xC5\x83");  // soft hyphen: the last one, U+0143
  EXPECT_EQ(byte_level_char(0xFF), "\xC3\xBF");  // 'ÿ'
  std::string all, back;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string encoded;
  byte_level_encode_append(all, encoded);
  byte_level_decode_append(encoded, back);
  EXPECT_EQ(back, all);
  for (int b = 0; b < 256; ++b) {
    const std::string_view c = byte_level_char(static_cast<uint8_t>(b));
    uint32_t cp = static_cast<uint8_t>(c[0]);
    if (c.size() == 2) cp = ((cp & 0x1F) << 6) | (static_cast<uint8_t>(c[1]) & 0x3F);
    EXPECT_EQ(byte_level_byte(cp), b);
  }
  EXPECT_EQ(byte_level_byte(' '), -1);  // not in the alphabet
  EXPECT_EQ(byte_level_byte(0x144), -1);
  EXPECT_EQ(byte_level_byte(0x4E00), -1);
}

TEST(ByteLevel, DecodeKeepsForeignCharactersAndBadBytes) {
  std::string out;
  byte_level_decode_append("\xC4\xA0x \xE4\xB8\x80\xFF\xC4", out);
  EXPECT_EQ(out, " x \xE4\xB8\x80\xFF\xC4");  // 'Ġ' -> space; the rest verbatim
}

// ---------------------------------------------------------------------------------------------
// Regex rewriting and the pre-tokenizer table.

TEST(PreTokenizer, WhitespaceClassesAreUnicodeWhiteSpace) {
  const std::string ws = expand_whitespace_classes(R"(\s)");
  EXPECT_EQ(ws.front(), '[');
  EXPECT_NE(ws.find(R"(\x{85})"), std::string::npos);
  EXPECT_EQ(ws.find(R"(\x{180E})"), std::string::npos);
  EXPECT_EQ(expand_whitespace_classes(R"([^\s\p{L}])").substr(0, 3), "[^\\");
  EXPECT_EQ(expand_whitespace_classes(R"(\S)").substr(0, 2), "[^");
  EXPECT_EQ(expand_whitespace_classes(R"(\\s)"), R"(\\s)");  // an escaped backslash, then 's'
  EXPECT_EQ(expand_whitespace_classes(R"([]\s])").substr(0, 2), "[]");
  EXPECT_THROW(expand_whitespace_classes(R"([\S])"), Error);

  // U+0085 (NEL) is White_Space; U+180E is not (since Unicode 6.3), though PCRE2's \s says so.
  EXPECT_EQ(split("gpt-2", "x\xC2\x85\xC2\x85y"), (Pieces{"x", "\xC2\x85", "\xC2\x85", "y"}));
  EXPECT_EQ(split("gpt-2", "x\xE1\xA0\x8E\xE1\xA0\x8Ey"),
            (Pieces{"x", "\xE1\xA0\x8E\xE1\xA0\x8E", "y"}));
}

TEST(PreTokenizer, EveryKnownNameCompilesWithJit) {
  ASSERT_GE(bpe_pre_names().size(), 40u);
  for (const std::string_view name : bpe_pre_names()) {
    const BpePreInfo info = bpe_pre_info(name);
    EXPECT_TRUE(info.known) << name;
    EXPECT_FALSE(info.patterns.empty()) << name;
    const PreTokenizer pre(info.patterns);
    EXPECT_TRUE(pre.jit()) << name;
    // Sanity: every family cuts a mixed string into pieces that cover it.
    const std::string text = "Hello, world! It's 2024-12-31\n\t  \xE4\xBD\xA0\xE5\xA5\xBD 3.14";
    std::string joined;
    for (const std::string& p : pre.split(text)) {
      EXPECT_FALSE(p.empty()) << name;
      joined += p;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(PreTokenizer, NamesSelectFamilies) {
  EXPECT_EQ(bpe_pre_info("llama-bpe").family, "llama3");
  EXPECT_TRUE(bpe_pre_info("llama-bpe").ignore_merges);
  EXPECT_TRUE(bpe_pre_info("llama-bpe").add_bos);
  EXPECT_EQ(bpe_pre_info("qwen2").family, "qwen2");
  EXPECT_FALSE(bpe_pre_info("qwen2").ignore_merges);
  EXPECT_FALSE(bpe_pre_info("qwen2").add_bos);
  EXPECT_EQ(bpe_pre_info("mpt").family, "gpt-2");
  EXPECT_EQ(bpe_pre_info("smollm").family, "starcoder");
  EXPECT_EQ(bpe_pre_info("dbrx").family, "llama3-regex");
  EXPECT_FALSE(bpe_pre_info("dbrx").ignore_merges);
  EXPECT_EQ(bpe_pre_info("deepseek-coder").family, "deepseek-coder");
  EXPECT_EQ(bpe_pre_info("gpt-4o").family, "gpt-4o");
  // Missing key and "default": llama.cpp's default BPE set.
  EXPECT_EQ(bpe_pre_info("").family, "default");
  EXPECT_TRUE(bpe_pre_info("").known);
  EXPECT_EQ(bpe_pre_info("default").patterns.size(), 4u);
  // Unknown: the GPT-2 regex, flagged so that the caller warns.
  const BpePreInfo unknown = bpe_pre_info("some-future-model");
  EXPECT_FALSE(unknown.known);
  EXPECT_EQ(unknown.family, "gpt-2");
}

// ---------------------------------------------------------------------------------------------
// Splits, as Hugging Face's Split(isolated) pre-tokenizers make them.

TEST(PreTokenizer, Gpt2) {
  EXPECT_EQ(split("gpt-2", "Hello world's  test 123!!"),
            (Pieces{"Hello", " world", "'s", " ", " test", " 123", "!!"}));
  EXPECT_EQ(split("gpt-2", "a \tb  "), (Pieces{"a", " ", "\t", "b", "  "}));
  EXPECT_EQ(split("gpt-2", "I'VE"), (Pieces{"I", "'", "VE"}));  // case-sensitive contractions
  EXPECT_TRUE(split("gpt-2", "").empty());
}

TEST(PreTokenizer, Llama3AndQwen2) {
  EXPECT_EQ(split("llama-bpe", "Hello world 12345"), (Pieces{"Hello", " world", " ", "123", "45"}));
  EXPECT_EQ(split("qwen2", "Hello world 12345"),
            (Pieces{"Hello", " world", " ", "1", "2", "3", "4", "5"}));
  EXPECT_EQ(split("llama-bpe", "I'VE it's"), (Pieces{"I", "'VE", " it", "'s"}));
  EXPECT_EQ(split("llama-bpe", "\n\n  x"), (Pieces{"\n\n", " ", " x"}));
  EXPECT_EQ(split("llama-bpe", "a = b;\n"), (Pieces{"a", " =", " b", ";\n"}));
  EXPECT_EQ(split("llama-bpe", "(x)"), (Pieces{"(x", ")"}));
  // (?i:) folds case the Unicode way: "'ſ" (long s) is a contraction, as in tiktoken / HF.
  EXPECT_EQ(split("llama-bpe", "'\xC5\xBF"), (Pieces{"'\xC5\xBF"}));
}

TEST(PreTokenizer, SequencesApplyPieceByPiece) {
  // deepseek-coder: newlines, letter runs, punctuation runs, CJK runs, single digits.
  EXPECT_EQ(split("deepseek-coder", "ab, cd12\n\xE4\xBD\xA0\xE5\xA5\xBD"),
            (Pieces{"ab", ",", " cd", "1", "2", "\n", "\xE4\xBD\xA0\xE5\xA5\xBD"}));
  // starcoder family: every digit alone, then GPT-2.
  EXPECT_EQ(split("starcoder", "x 123"), (Pieces{"x", " ", "1", "2", "3"}));
  // deepseek-llm: `\s+$` sees the end of its piece, not of the text.
  EXPECT_EQ(split("deepseek-llm", "ab  \ncd"), (Pieces{"ab", "  ", "\n", "cd"}));
}

TEST(PreTokenizer, InvalidUtf8RunsArePiecesOfTheirOwn) {
  EXPECT_EQ(split("gpt-2",
                  "ab\xFF\xFE"
                  "cd"),
            (Pieces{"ab", "\xFF\xFE", "cd"}));
  EXPECT_EQ(split("llama-bpe", "a \x80"), (Pieces{"a", " ", "\x80"}));
  // A truncated character, then a valid one: the valid one is not swallowed.
  EXPECT_EQ(split("qwen2",
                  "\xE4\xBD"
                  "a"),
            (Pieces{"\xE4\xBD", "a"}));
  EXPECT_EQ(split("qwen2", std::string("a\0b", 3)), (Pieces{"a", std::string("\0b", 2)}));
}

TEST(PreTokenizer, PiecesCoverRandomBytesExactly) {
  std::mt19937 rng(7);
  const PreTokenizer pre(bpe_pre_info("deepseek-llm").patterns);
  const PreTokenizer llama(bpe_pre_info("llama3").patterns);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text;
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const unsigned r = rng() % 6;
      text += r == 0   ? static_cast<char>(rng() % 256)
              : r == 1 ? ' '
              : r == 2 ? '\n'
                       : static_cast<char>('a' + rng() % 26);
      if (rng() % 11 == 0) text += "\xE4\xBD\xA0";
    }
    for (const PreTokenizer* p : {&pre, &llama}) {
      std::vector<TextSpan> spans;
      p->split(text, spans);
      size_t at = 0;
      for (const TextSpan& s : spans) {
        ASSERT_EQ(s.offset, at) << test::escaped(text);
        ASSERT_GT(s.length, 0u);
        at += s.length;
      }
      ASSERT_EQ(at, text.size()) << test::escaped(text);
    }
  }
}

TEST(PreTokenizer, LongRunsStayLinear) {
  // Long runs exercise the JIT stack and the backtracking alternatives (\s*[\r\n]+ ...).
  const PreTokenizer pre(bpe_pre_info("llama3").patterns);
  const std::string spaces(200000, ' ');
  EXPECT_EQ(pre.split(spaces + "x"), (Pieces{std::string(199999, ' '), " x"}));
  EXPECT_EQ(pre.split(std::string(200000, 'a')).size(), 1u);
  EXPECT_EQ(pre.split(std::string(300000, '7')).size(), 100000u);
  EXPECT_EQ(pre.split(std::string(100000, '\n')).size(), 1u);
}

}  // namespace
}  // namespace hearth
