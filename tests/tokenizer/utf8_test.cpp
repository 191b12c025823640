#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace hearth {
namespace {

const std::string kFFFD(kReplacementChar);

TEST(Utf8, CharLen) {
  EXPECT_EQ(utf8_char_len("a", 0), 1u);
  EXPECT_EQ(utf8_char_len(std::string(1, '\0'), 0), 1u);
  EXPECT_EQ(utf8_char_len("\xC3\xA9", 0), 2u);
  EXPECT_EQ(utf8_char_len("x\xE2\x96\x81", 1), 3u);
  EXPECT_EQ(utf8_char_len("\xF0\x9F\x90\xB6", 0), 4u);
  EXPECT_EQ(utf8_char_len("\x80", 0), 0u);              // stray continuation
  EXPECT_EQ(utf8_char_len("\xC3", 0), 0u);              // truncated
  EXPECT_EQ(utf8_char_len("\xC3 ", 0), 0u);             // missing continuation
  EXPECT_EQ(utf8_char_len("\xC0\x80", 0), 0u);          // overlong
  EXPECT_EQ(utf8_char_len("\xED\xA0\x80", 0), 0u);      // surrogate
  EXPECT_EQ(utf8_char_len("\xF4\x90\x80\x80", 0), 0u);  // above U+10FFFF
  EXPECT_EQ(utf8_char_len("\xFF", 0), 0u);
}

TEST(Utf8, ValidTextPassesUnchanged) {
  for (const std::string s : {"", "abc", "caf\xC3\xA9", "\xE2\x96\x81", "\xF0\x9F\x90\xB6",
                              "\xE4\xBD\xA0\xE5\xA5\xBD!", "\xF4\x8F\xBF\xBF", "\xED\x9F\xBF"}) {
    EXPECT_TRUE(utf8_is_valid(s)) << s;
    EXPECT_EQ(utf8_sanitize(s), s);
  }
}

TEST(Utf8, InvalidSequencesBecomeOneReplacementPerMaximalSubpart) {
  struct Case {
    std::string in, out;
  };
  const Case cases[] = {
      {"\x80", kFFFD},  // stray continuation
      {"a\xBF"
       "b",
       "a" + kFFFD + "b"},
      {"\xC0\xAF", kFFFD + kFFFD},  // overlong lead C0: two errors
      {"\xC3", kFFFD},              // truncated at the end
      {"\xC3"
       "a",
       kFFFD + "a"},        // missing continuation
      {"\xE2\x96", kFFFD},  // truncated 3-byte: one subpart
      {"\xE2\x96"
       "a",
       kFFFD + "a"},
      {"\xE0\x80\x80", kFFFD + kFFFD + kFFFD},  // overlong: E0 needs A0..BF
      {"\xED\xA0\x80", kFFFD + kFFFD + kFFFD},  // surrogate
      {"\xF0\x9F\x90", kFFFD},                  // truncated 4-byte
      {"\xF0\x9F\x90"
       "A",
       kFFFD + "A"},
      {"\xF4\x90\x80\x80", kFFFD + kFFFD + kFFFD + kFFFD},  // above U+10FFFF
      {"\xF5\x80", kFFFD + kFFFD},
      {"\xFF", kFFFD},
      {"\xF0\x9F\x90\xB6\xF0\x9F", "\xF0\x9F\x90\xB6" + kFFFD},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(utf8_is_valid(c.in));
    EXPECT_EQ(utf8_sanitize(c.in), c.out) << "input bytes: " << c.in.size();
    EXPECT_TRUE(utf8_is_valid(utf8_sanitize(c.in)));
  }
}

TEST(Utf8, NonFinalHoldsBackOnlyAValidIncompleteTail) {
  std::string out;
  EXPECT_EQ(utf8_sanitize_append("ab\xF0\x9F", out, false), 2u);
  EXPECT_EQ(out, "ab");
  out.clear();
  EXPECT_EQ(utf8_sanitize_append("\xF0\x9F\x90", out, false), 0u);
  EXPECT_EQ(out, "");
  out.clear();
  // Ill-formed already (F0 must be followed by 90..BF): no reason to wait.
  EXPECT_EQ(utf8_sanitize_append("\xF0\x80", out, false), 2u);
  EXPECT_EQ(out, kFFFD + kFFFD);
}

TEST(Utf8, RandomBytesAlwaysGiveValidUtf8AndStreamingAgrees) {
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 5000; ++iter) {
    std::string s(rng() % 24, '\0');
    for (char& c : s) c = static_cast<char>(rng() % 4 == 0 ? 0x80 + rng() % 0x80 : rng() % 256);
    const std::string whole = utf8_sanitize(s);
    ASSERT_TRUE(utf8_is_valid(whole));
    // Feeding the bytes in random chunks gives the same text.
    std::string pending, streamed;
    size_t i = 0;
    while (i < s.size()) {
      const size_t n = std::min<size_t>(s.size() - i, 1 + rng() % 4);
      pending.append(s, i, n);
      i += n;
      pending.erase(0, utf8_sanitize_append(pending, streamed, false));
      ASSERT_LE(pending.size(), 3u);
    }
    utf8_sanitize_append(pending, streamed, true);
    ASSERT_EQ(streamed, whole);
  }
}

}  // namespace
}  // namespace hearth
