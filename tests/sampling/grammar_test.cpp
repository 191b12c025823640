// The GBNF grammar engine: parse errors with their line:column, the limits, left recursion,
// the compiled form of repetitions, and the matcher on a JSON grammar (whole, split at every
// byte, byte by byte), bounded repetitions, classes and UTF-8 split mid-character, and the
// bounds on its stacks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_matcher.h"
#include "sampling/grammar_test_util.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::compile;
using test::feed;
using test::Outcome;

// The message of the error parsing `text` throws, or "" when it parses.
std::string parse_error(std::string_view text, const GrammarLimits& limits = {}) {
  try {
    Grammar::parse(text, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& s, std::string_view part) {
  return s.find(part) != std::string::npos;
}

TEST(GrammarParse, ErrorsGiveLineColumnAndWhatWasExpected) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"root ::= [a-z", "grammar 1:14: expected ']'"},
      {"root ::= \"abc", "grammar 1:14: expected '\"' to close the string"},
      {"root ::= ( \"a\" | \"b\"", "grammar 1:21: expected ')'"},
      {"root ::= \"a\"\nfoo ::= bar baz\n", "grammar 2:9: undefined rule 'bar'"},
      {"root ::= \"a\" @", "grammar 1:14: expected an item, '|' or the end of the line"},
      {"root := \"a\"", "grammar 1:6: expected '::='"},
      {"root ::= \"\\q\"", "grammar 1:11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "grammar 1:14: expected 2 hex digits after '\\x'"},
      {"root ::= *", "grammar 1:10: expected an item before '*'"},
      {"root ::= \"a\"{3,2}", "grammar 1:13: repetition {3,2}: the maximum is below the minimum"},
      {"root ::= \"a\"{2", "grammar 1:15: expected ',' or '}'"},
      {"root ::= \"a\"{,2}", "grammar 1:14: expected a number"},
      {"root ::= [z-a]", "grammar 1:11: a range whose end is before its start"},
      {"root ::= item+\nitem ::= \"x\" |\n  ( \"y\"\n  ]", "grammar 4:3: expected ')'"},
      {"root ::= \"a\"\nroot ::= \"b\"",
       "grammar 2:1: rule 'root' is defined twice (first at 1:1)"},
      {"root ::= \"日本\" [", "grammar 1:16: expected ']'"},  // columns count characters
      {"root ::= \"\xff\"", "grammar 1:11: invalid UTF-8"},
      {"root ::= \"\\U00110000\"", "grammar 1:11: a code point above U+10FFFF"},
      {"  # comment\n::= \"a\"", "grammar 2:1: expected a rule name"},
      {"foo ::= \"a\"", "grammar: no rule named 'root'"},
      {"", "grammar: no rule named 'root'"},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(parse_error(text), want) << text;
}

TEST(GrammarParse, AcceptsTheSyntaxLlamaServerAccepts) {
  EXPECT_EQ(parse_error(test::kJsonGrammar), "");
  // Newlines inside parentheses and after ::= and |, comments anywhere a space may be, CRLF.
  EXPECT_EQ(parse_error("root ::=\n  a |  # first\n  b\r\na ::= ( \"x\"\n \"y\" ) # c\nb ::= "
                        "[^\\]\\[-] . \"\\t\\n\\r\\\\\\\"\\[\\]\""),
            "");
  EXPECT_EQ(parse_error(
                "root ::= \"a\" { 2 , 3 } [b]{0,} [c]{1} x-1\nx-1 ::= \"\\u00e9\\U0001F600\\x41\""),
            "");
  EXPECT_EQ(parse_error("root ::= [] | [^] | \"\" | ()"), "");  // empty class, any, empty
  // A class ends at its first ']'; a '-' before it is a plain character.
  const auto g = compile("root ::= [a-] [-a]");
  EXPECT_EQ(feed(g, "--"), Outcome::kComplete);
  EXPECT_EQ(feed(g, "aa"), Outcome::kComplete);
  EXPECT_EQ(feed(g, "b"), Outcome::kRejected);
}

TEST(GrammarParse, RepetitionsBecomeRules) {
  EXPECT_EQ(Grammar::parse("root ::= \"a\"{2,3}").to_string(),
            "root ::= [a] [a] root.1\nroot.1 ::= [a] |\n");
  EXPECT_EQ(Grammar::parse("root ::= \"a\"{2,}").to_string(),
            "root ::= [a] [a] root.1\nroot.1 ::= [a] root.1 |\n");
  EXPECT_EQ(Grammar::parse("root ::= \"ab\"{0,2}").to_string(),
            "root ::= root.2\nroot.1 ::= [a] [b] |\nroot.2 ::= [a] [b] root.1 |\n");
  // A group of one alternative is inlined; one of several becomes a rule.
  EXPECT_EQ(Grammar::parse("root ::= (\"a\" [b-c]) (\"d\" | [^e])").to_string(),
            "root ::= [a] [b-c] root.1\nroot.1 ::= [d] | [\\x00-df-\\U0010FFFF]\n");
  EXPECT_EQ(Grammar::parse("root ::= \"x\"{0}").to_string(), "root ::=\n");
}

TEST(GrammarParse, RejectsLeftRecursion) {
  const std::vector<std::string> bad = {
      "root ::= root \"a\" | \"b\"",
      "root ::= a \"x\"\na ::= b\nb ::= \"\" | root",
      "root ::= e root \"x\" | \"y\"\ne ::= \"z\"?",  // through a rule that can be empty
      "root ::= (\"a\"?)*",                           // a repetition of something empty
      "root ::= \"\"*",
      "root ::= x\nx ::= y | \"a\"\ny ::= x",
  };
  for (const auto& text : bad) {
    const std::string e = parse_error(text);
    EXPECT_TRUE(contains(e, "left recursion:")) << text << " -> " << e;
    EXPECT_TRUE(contains(e, "can repeat without consuming a character")) << e;
  }
  EXPECT_EQ(parse_error("root ::= root \"a\" | \"b\""),
            "grammar 1:1: left recursion: root -> root can repeat without consuming a character");
  EXPECT_EQ(parse_error("root ::= a \"x\"\na ::= b\nb ::= \"\" | root"),
            "grammar 1:1: left recursion: root -> a -> b -> root can repeat without consuming a "
            "character");
  // Recursion after a character is fine.
  EXPECT_EQ(parse_error("root ::= \"a\" root | \"\""), "");
  EXPECT_EQ(parse_error("root ::= \"(\" root \")\" root | \"\""), "");
  EXPECT_EQ(parse_error("root ::= x* \"!\"\nx ::= \"a\" | \"b\" x"), "");
}

TEST(GrammarParse, RejectsWhatPassesTheLimits) {
  const std::string big = "root ::= \"" + std::string(256 * 1024, 'a') + "\"";
  EXPECT_EQ(parse_error(big), "grammar: 262155 bytes, more than the limit of 262144");

  const auto nested = [](int depth) {
    return "root ::= " + std::string(static_cast<size_t>(depth), '(') + "\"a\" | \"b\"" +
           std::string(static_cast<size_t>(depth), ')');
  };
  EXPECT_EQ(parse_error(nested(64)), "");
  EXPECT_EQ(parse_error(nested(65)), "grammar 1:74: parentheses nested deeper than 64");

  EXPECT_EQ(parse_error("root ::= \"a\"{10000}"), "");
  EXPECT_EQ(parse_error("root ::= \"a\"{10001}"),
            "grammar 1:14: a repetition count above the limit of 10000");
  EXPECT_EQ(parse_error("root ::= \"a\"{0,99999999999999999999}"),
            "grammar 1:16: a repetition count above the limit of 10000");
  const std::string total = "root ::= \"" + std::string(110, 'a') + "\"{10000}";
  EXPECT_TRUE(contains(parse_error(total), "grows past 1048576 elements")) << parse_error(total);
  EXPECT_TRUE(contains(parse_error("root ::= \"a\"{10000}{10000}{10000}"), "grows past"));
  // The rule limit (32768, repetitions included; named rules alone cannot reach it within the
  // text limit).
  EXPECT_EQ(parse_error("root ::= \"a\"{0,10000}"), "");  // a JSON Schema's maxLength 10000
  EXPECT_EQ(parse_error("root ::= \"a\"{0,9000} \"b\"{0,9000} \"c\"{0,9000} \"d\"{0,9000}"),
            "grammar 1:49: this repetition needs 9000 rules, more than the limit of 32768 in all");

  GrammarLimits small;
  small.max_text_bytes = 10;
  EXPECT_TRUE(contains(parse_error("root ::= \"abc\"", small), "more than the limit of 10"));
}

// Every way of feeding `text`: whole, in two pieces at each offset, byte by byte.
void expect_outcome(const std::shared_ptr<const Grammar>& g, std::string_view text, Outcome want) {
  EXPECT_EQ(feed(g, text), want) << "whole: " << text;
  for (size_t cut = 0; cut <= text.size(); ++cut)
    EXPECT_EQ(feed(g, text, {cut}), want) << "split at " << cut << ": " << text;
  std::vector<size_t> every;
  for (size_t i = 1; i < text.size(); ++i) every.push_back(i);
  EXPECT_EQ(feed(g, text, every), want) << "byte by byte: " << text;
}

TEST(GrammarMatcher, JsonDocuments) {
  const auto g = compile(test::kJsonGrammar);
  for (const char* doc :
       {"{}", "[]", "\"x\"", "0", "-12.5e+3", "true", "null", "  [ 1 , 2 ]\n",
        R"({ "a" : [1, 2.0, -3e4, "s\"q\\\/\b\f\n\r\t\u00e9"], "b": {"c": null, "d": false} })",
        R"([[[[]]], {"": ""}, [true,false]])", "\"日本 é 😀\"", R"("\u0041\uFFFF")"})
    expect_outcome(g, doc, Outcome::kComplete);
  for (const char* doc :
       {"{", "[1,", "\"abc", "tru", "-", "1.", "1e", "{\"a\":", "\"\\u00", "", " "})
    expect_outcome(g, doc, Outcome::kIncomplete);
  for (const char* doc :
       {"{,}", "[1,]", "01", "\"\\x\"", "tru e", "{\"a\" 1}", "{} {}", "[1 2]", "\"a\\u00G0\"",
        "nulx", "\"ctrl\x01\"", "-a", "{'a': 1}", "[1]]", "\"\xC3\x28\""})
    expect_outcome(g, doc, Outcome::kRejected);
}

TEST(GrammarMatcher, BoundedRepetitions) {
  const auto g = compile("root ::= \"a\"{2,3}");
  EXPECT_EQ(feed(g, ""), Outcome::kIncomplete);
  EXPECT_EQ(feed(g, "a"), Outcome::kIncomplete);
  EXPECT_EQ(feed(g, "aa"), Outcome::kComplete);
  EXPECT_EQ(feed(g, "aaa"), Outcome::kComplete);
  EXPECT_EQ(feed(g, "aaaa"), Outcome::kRejected);
  EXPECT_EQ(feed(g, "ab"), Outcome::kRejected);

  const auto exact = compile("root ::= (\"ab\"){2}");
  EXPECT_EQ(feed(exact, "aba"), Outcome::kIncomplete);
  EXPECT_EQ(feed(exact, "abab"), Outcome::kComplete);
  EXPECT_EQ(feed(exact, "ababa"), Outcome::kRejected);

  const auto open = compile("root ::= [0-9]{2,}");
  EXPECT_EQ(feed(open, "1"), Outcome::kIncomplete);
  EXPECT_EQ(feed(open, "12"), Outcome::kComplete);
  EXPECT_EQ(feed(open, "1234567890"), Outcome::kComplete);
  EXPECT_EQ(feed(open, "12a"), Outcome::kRejected);

  const auto upto = compile("root ::= \"x\"{0,2} \"y\" \"z\"{0}");
  EXPECT_EQ(feed(upto, "y"), Outcome::kComplete);
  EXPECT_EQ(feed(upto, "xy"), Outcome::kComplete);
  EXPECT_EQ(feed(upto, "xxy"), Outcome::kComplete);
  EXPECT_EQ(feed(upto, "xxxy"), Outcome::kRejected);
  EXPECT_EQ(feed(upto, "yz"), Outcome::kRejected);

  const auto ops = compile("root ::= \"a\"+ \"b\"? \"c\"*");
  for (const char* ok : {"a", "aaa", "ab", "abccc", "aaacc"})
    EXPECT_EQ(feed(ops, ok), Outcome::kComplete) << ok;
  for (const char* bad : {"b", "abb", "acb"}) EXPECT_EQ(feed(ops, bad), Outcome::kRejected) << bad;
}

TEST(GrammarMatcher, NegatedClassesAndUtf8SplitMidCharacter) {
  const auto not_a = compile("root ::= [^a]+");
  for (const char* s : {"é", "日本", "😀", "b日😀é", "\xd0\xb0"})  // the last: Cyrillic а
    expect_outcome(not_a, s, Outcome::kComplete);
  expect_outcome(not_a, "a", Outcome::kRejected);
  expect_outcome(not_a, "日a", Outcome::kRejected);

  GrammarMatcher m(not_a);
  ASSERT_TRUE(m.accept_bytes("b\xC3"));  // half of é: alive, but cannot end mid-character
  EXPECT_FALSE(m.can_end());
  ASSERT_TRUE(m.accept_bytes("\xA9"));
  EXPECT_TRUE(m.can_end());

  const auto literal = compile("root ::= \"é\" \"日本\" \"😀\"");
  expect_outcome(literal, "é日本😀", Outcome::kComplete);
  expect_outcome(literal, "é日本", Outcome::kIncomplete);
  expect_outcome(literal, "é日木😀", Outcome::kRejected);

  // A prefix of a character is refused as soon as no allowed character starts with it.
  const auto hiragana = compile("root ::= [\\u3040-\\u309F]+");
  expect_outcome(hiragana, "ひらがな", Outcome::kComplete);
  GrammarMatcher h(hiragana);
  EXPECT_TRUE(h.accept_bytes("\xE3\x82"));  // U+3080..30BF: some of them are hiragana
  EXPECT_FALSE(h.accept_bytes("\xAB"));     // U+30AB, katakana カ
  EXPECT_TRUE(contains(h.error(), "U+30AB")) << h.error();
  GrammarMatcher h2(hiragana);
  EXPECT_FALSE(h2.accept_bytes("\xE4"));  // U+4000..4FFF: none
  EXPECT_TRUE(contains(h2.error(), "byte 0xE4")) << h2.error();

  const auto any3 = compile("root ::= . . .");
  expect_outcome(any3, "a日😀", Outcome::kComplete);
  expect_outcome(any3, "ab", Outcome::kIncomplete);
  const auto no_ascii = compile("root ::= [^\\x00-\\x7F]");
  expect_outcome(no_ascii, "x", Outcome::kRejected);
  expect_outcome(no_ascii, "ü", Outcome::kComplete);
}

TEST(GrammarMatcher, RejectsInvalidUtf8) {
  const auto g = compile("root ::= .*");
  for (const char* bad : {"\xC3\x28", "\xFF", "\x80", "\xED\xA0\x80", "\xC0\xAF", "\xE0\x80\x80",
                          "\xF4\x90\x80\x80", "\xF8\x88\x80\x80\x80"}) {
    GrammarMatcher m(g);
    EXPECT_FALSE(m.accept_bytes(bad)) << bad;
    EXPECT_TRUE(m.dead());
    EXPECT_TRUE(contains(m.error(), "invalid UTF-8")) << m.error();
  }
  GrammarMatcher ok(g);
  EXPECT_TRUE(ok.accept_bytes("\xED\x9F\xBF\xF4\x8F\xBF\xBF"));  // U+D7FF, U+10FFFF
  EXPECT_TRUE(ok.can_end());
}

TEST(GrammarMatcher, CopiesAreIndependentAndDeadStaysDead) {
  const auto g = compile("root ::= \"ab\" | \"ac\"");
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_bytes("a"));
  GrammarMatcher copy = m;
  EXPECT_TRUE(copy.accept_bytes("b"));
  EXPECT_TRUE(copy.can_end());
  EXPECT_FALSE(m.can_end());  // the original did not move
  EXPECT_EQ(m.n_stacks(), 2u);
  EXPECT_FALSE(m.accept_bytes("x"));
  EXPECT_TRUE(m.dead());
  EXPECT_EQ(m.error(), "grammar: 'x' at byte 1 of the text: not allowed by the grammar");
  EXPECT_FALSE(m.accept_bytes("c"));
  EXPECT_FALSE(m.accept_bytes(""));
  m.reset();
  EXPECT_TRUE(m.accept_bytes("ac"));
  EXPECT_TRUE(m.can_end());
  EXPECT_EQ(m.error(), "");
  EXPECT_FALSE(m.accept_bytes("c"));  // the root is done: nothing may follow
}

TEST(GrammarMatcher, AmbiguityStaysBounded) {
  // Paths that meet are merged: 40 rules that each may match "" two ways would be 2^40 paths.
  std::string text = "root ::=";
  for (int i = 0; i < 40; ++i) text += " b";
  text += " \"!\"\nb ::= c | d | \"a\"\nc ::= \"\"\nd ::= \"\" | \"a\"";
  const auto g = compile(text);
  GrammarMatcher m(g);
  EXPECT_EQ(m.n_stacks(), 81u);  // each b as "a" two ways, after k empty ones; or "!"
  EXPECT_TRUE(m.accept_bytes(std::string(40, 'a') + "!"));
  EXPECT_TRUE(m.can_end());

  // More stacks than the limit is a rejection, with the reason.
  std::string wide = "root ::= \"x\"";
  for (int i = 0; i < 1100; ++i) wide += " | \"x\"";
  GrammarMatcher too_wide(compile(wide));
  EXPECT_TRUE(too_wide.dead());
  EXPECT_TRUE(contains(too_wide.error(), "too ambiguous")) << too_wide.error();

  MatcherLimits two;
  two.max_stacks = 2;
  GrammarMatcher small(compile("root ::= \"x\" (\"a\" \"b\" | \"a\" \"c\" | \"a\" \"d\")"), two);
  EXPECT_FALSE(small.accept_bytes("x"));
  EXPECT_TRUE(contains(small.error(), "too ambiguous")) << small.error();

  // Nesting deeper than max_depth frames is refused, not grown without end.
  const auto parens = compile("root ::= \"(\" root \")\" | \"\"");
  GrammarMatcher deep(parens);
  EXPECT_TRUE(deep.accept_bytes(std::string(1000, '(')));
  EXPECT_LE(deep.n_stacks(), 2u);
  EXPECT_FALSE(deep.accept_bytes(std::string(100, '(')));
  EXPECT_TRUE(contains(deep.error(), "too deep")) << deep.error();
  GrammarMatcher balanced(parens);
  EXPECT_TRUE(balanced.accept_bytes(std::string(500, '(') + std::string(500, ')')));
  EXPECT_TRUE(balanced.can_end());
}

TEST(GrammarMatcher, EmptyLanguagesAndEmptyMatches) {
  // A language with no text is refused when the grammar is compiled (below), before a matcher.
  EXPECT_TRUE(contains(parse_error("root ::= []"), "no text matches"));
  GrammarMatcher empty(compile("root ::= \"\""));
  EXPECT_TRUE(empty.can_end());
  EXPECT_FALSE(empty.dead());
  EXPECT_FALSE(empty.accept_bytes("a"));
}

// A class that matches no character can never be part of a match: alternatives that need one
// are dropped at compile time (so generation is never led into them), and a grammar with no
// alternative left is refused.
TEST(GrammarParse, AlternativesThatMatchNoTextAreDroppedAndAnEmptyLanguageRefused) {
  const char* none = "[^\\x00-\\U0010FFFF]";
  EXPECT_TRUE(contains(parse_error(std::string("root ::= ") + none), "no text matches"));
  EXPECT_TRUE(contains(parse_error(std::string("root ::= x\nx ::= \"a\" x | \"b\" ") + none),
                       "no text matches"));
  // x can only recurse forever: it matches no finite text.
  EXPECT_TRUE(contains(parse_error("root ::= x\nx ::= \"b\" x"), "no text matches"));
  const auto g =
      compile(std::string("root ::= \"a\" | \"b\" ") + none + " | dead\n" + "dead ::= \"c\" dead");
  // Only "a" is left: "b" leads into the empty class and "dead" never ends.
  EXPECT_EQ(feed(g, "a"), Outcome::kComplete);
  EXPECT_EQ(feed(g, "b"), Outcome::kRejected);
  EXPECT_EQ(feed(g, "c"), Outcome::kRejected);
}

}  // namespace
}  // namespace hearth
