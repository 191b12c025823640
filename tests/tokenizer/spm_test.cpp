#include "tokenizer/spm.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/special.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::escaped;
using test::ids_str;
using test::toy_spm_data;

const std::string kSp(kSpmSpace);  // U+2581

std::vector<TokenId> segment(const Vocab& v, const std::string& text) {
  std::vector<TokenId> out;
  spm_segment(v, text, out);
  return out;
}

std::string replace_all(const std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out.append(to);
  }
  out.append(s, pos, std::string::npos);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The merge algorithm on hand-made vocabularies (ids of the pieces start at 259).

TEST(SpmSegment, HighestScoringPairMergesFirst) {
  const Vocab v = Vocab::build(toy_spm_data({{"a", -1},
                                             {"b", -1},
                                             {"c", -1},  // 259..261
                                             {"ab", -5},
                                             {"bc", -2}}));        // 262, 263
  EXPECT_EQ(segment(v, "abc"), (std::vector<TokenId>{259, 263}));  // a + bc
  EXPECT_EQ(segment(v, "ab"), (std::vector<TokenId>{262}));
}

TEST(SpmSegment, TiesGoToTheLeftmostPair) {
  const Vocab v = Vocab::build(toy_spm_data({{"a", -1}, {"aa", -2}}));  // 259, 260
  EXPECT_EQ(segment(v, "aaa"), (std::vector<TokenId>{260, 259}));
  EXPECT_EQ(segment(v, "aaaa"), (std::vector<TokenId>{260, 260}));
  EXPECT_EQ(segment(v, "aaaaa"), (std::vector<TokenId>{260, 260, 259}));
}

TEST(SpmSegment, MergedSymbolsMergeAgainAndStalePairsAreSkipped) {
  const Vocab v = Vocab::build(toy_spm_data({{"a", -1}, {"aa", -2}, {"aaaa", -3}}));
  EXPECT_EQ(segment(v, "aaaa"), (std::vector<TokenId>{261}));
  EXPECT_EQ(segment(v, "aaaaaa"), (std::vector<TokenId>{261, 260}));
  // A lower-scored longer token is only reached through higher-scored steps.
  const Vocab w = Vocab::build(toy_spm_data({{"x", -1}, {"y", -1}, {"xy", -9}, {"yx", -1}}));
  EXPECT_EQ(segment(w, "xyx"), (std::vector<TokenId>{259, 262}));  // yx wins, then xyx absent
}

TEST(SpmSegment, CharactersOutsideTheVocabularyFallBackToBytes) {
  const Vocab v = Vocab::build(toy_spm_data({{"a", -1}, {kSp, -1}}));  // 259, 260
  // é = C3 A9, 🐶 = F0 9F 90 B6
  EXPECT_EQ(segment(v, "a\xC3\xA9"), (std::vector<TokenId>{259, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(segment(v, "\xF0\x9F\x90\xB6"),
            (std::vector<TokenId>{3 + 0xF0, 3 + 0x9F, 3 + 0x90, 3 + 0xB6}));
  EXPECT_EQ(segment(v, "\n"), (std::vector<TokenId>{3 + 0x0A}));
}

TEST(SpmSegment, InvalidUtf8NeverFailsAndKeepsEveryByte) {
  const Vocab v = Vocab::build(toy_spm_data({{"a", -1}, {"b", -1}, {"ab", -2}, {kSp, -1}}));
  // A stray continuation byte is a symbol of its own.
  EXPECT_EQ(segment(v,
                    "a\x80"
                    "b"),
            (std::vector<TokenId>{259, 3 + 0x80, 260}));
  // So is every byte of a sequence that is not a whole character: the text after it still
  // merges normally (llama.cpp would let F0 swallow "aba").
  EXPECT_EQ(segment(v,
                    "\xF0"
                    "ab"
                    "ab"),
            (std::vector<TokenId>{3 + 0xF0, 261, 261}));
  EXPECT_EQ(segment(v, "\xC3" + kSp + "a"), (std::vector<TokenId>{3 + 0xC3, 262, 259}));
  EXPECT_EQ(segment(v, "\xED\xA0\x80"), (std::vector<TokenId>{3 + 0xED, 3 + 0xA0, 3 + 0x80}));
  // Truncated at the end of the text.
  EXPECT_EQ(segment(v, "ab\xE2\x96"), (std::vector<TokenId>{261, 3 + 0xE2, 3 + 0x96}));
  EXPECT_EQ(segment(v, std::string(1, '\0')), (std::vector<TokenId>{3}));
}

TEST(SpmSegment, WithoutByteTokensUnknownCharactersBecomeUnk) {
  const Vocab v = Vocab::build(toy_spm_data({{"a", -1}}, /*with_bytes=*/false));  // "a" = 3
  EXPECT_EQ(segment(v,
                    "a\xC3\xA9"
                    "a"),
            (std::vector<TokenId>{3, 0, 0, 3}));
  VocabData d = toy_spm_data({{"a", -1}}, false);
  d.unk_id = 0xFFFFFFFFll;
  const Vocab no_unk = Vocab::build(d);
  EXPECT_THROW(segment(no_unk, "b"), Error);
  EXPECT_EQ(segment(no_unk, "aa"), (std::vector<TokenId>{3, 3}));
}

TEST(SpmTokenize, SpacePrefixBosEosAndEmptyText) {
  VocabData d = toy_spm_data({{kSp, -1}, {"a", -1}, {kSp + "a", -2}});  // 259..261
  const Vocab v = Vocab::build(d);
  EXPECT_EQ(spm_tokenize(v, "", true, false), (std::vector<TokenId>{1}));
  EXPECT_EQ(spm_tokenize(v, "", false, false), (std::vector<TokenId>{}));
  EXPECT_EQ(spm_tokenize(v, "a", true, false), (std::vector<TokenId>{1, 261}));
  EXPECT_EQ(spm_tokenize(v, "a a", false, false), (std::vector<TokenId>{261, 261}));
  EXPECT_EQ(spm_tokenize(v, " ", false, false), (std::vector<TokenId>{259, 259}));
  d.add_space_prefix = false;
  d.add_eos = true;
  const Vocab w = Vocab::build(d);
  EXPECT_EQ(spm_tokenize(w, "a", true, false), (std::vector<TokenId>{1, 260, 2}));
  EXPECT_EQ(spm_tokenize(w, "a", false, false), (std::vector<TokenId>{260}));
}

TEST(SpecialSplit, LongestFirstLeftmostAndStrip) {
  VocabData d = toy_spm_data({{"<|a|>", 0}, {"<|a|><|a|>", 0}});  // 259, 260
  d.types[259] = 4;                                               // USER_DEFINED
  d.types[260] = 3;                                               // CONTROL
  const Vocab v = Vocab::build(d);
  const std::string text = "x<|a|><|a|>y<|a|>";
  auto frags = split_special_tokens(v, text, true);
  ASSERT_EQ(frags.size(), 4u);
  EXPECT_EQ(frags[0].length, 1u);
  EXPECT_EQ(frags[1].token, 260);
  EXPECT_EQ(text.substr(frags[2].offset, frags[2].length), "y");
  EXPECT_EQ(frags[3].token, 259);
  // Without parse_special only the USER_DEFINED token splits.
  frags = split_special_tokens(v, text, false);
  ASSERT_EQ(frags.size(), 5u);
  EXPECT_EQ(frags[1].token, 259);
  EXPECT_EQ(frags[2].token, 259);
  EXPECT_TRUE(split_special_tokens(v, "", true).empty());
}

// ---------------------------------------------------------------------------------------------
// llama.cpp's vectors.

struct VectorResult {
  size_t n = 0;
  size_t mismatches = 0;
};

void check_vectors(const std::string& name) {
  const std::string base = test::shared_path("tokenizers/" + name);
  const Tokenizer& tok = test::load_tokenizer(base);
  const auto cases = test::read_vocab_cases(base);
  ASSERT_EQ(cases.size(), 46u);
  size_t mismatches = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto& c = cases[i];
    const auto ids = tok.encode(c.text, /*add_special=*/false, /*parse_special=*/false);
    if (ids != c.ids) {
      if (mismatches++ == 0) {
        ADD_FAILURE() << name << ": first mismatching string #" << i << " " << escaped(c.text)
                      << "\n  expected " << ids_str(c.ids) << "\n  got      " << ids_str(ids);
      }
    }
  }
  EXPECT_EQ(mismatches, 0u) << name << ": " << mismatches << " of " << cases.size()
                            << " strings tokenize differently from llama.cpp";
}

TEST(SpmVectors, LlamaSpmAllStringsMatch) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-llama-spm.gguf");
  check_vectors("ggml-vocab-llama-spm.gguf");
}

TEST(SpmVectors, Phi3AllStringsMatch) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-phi-3.gguf");
  check_vectors("ggml-vocab-phi-3.gguf");
}

// decode(encode(text)) == text for every vector string, with and without BOS, once the
// encoder's space prefix is stripped (DecodeOptions::strip_space_prefix). Without stripping
// the output has exactly one extra leading space for non-empty text.
TEST(SpmVectors, DecodeEncodeRoundTrips) {
  for (const std::string name : {"ggml-vocab-llama-spm.gguf", "ggml-vocab-phi-3.gguf"}) {
    if (!test::shared_exists("tokenizers/" + name)) GTEST_SKIP() << "no " << name;
    const std::string base = test::shared_path("tokenizers/" + name);
    const Tokenizer& tok = test::load_tokenizer(base);
    for (const auto& c : test::read_vocab_cases(base)) {
      for (const bool bos : {false, true}) {
        const auto ids = tok.encode(c.text, bos, false);
        EXPECT_EQ(tok.decode(ids, {.strip_space_prefix = true}), c.text)
            << name << " " << escaped(c.text) << " " << ids_str(ids);
        EXPECT_EQ(tok.decode(ids), c.text.empty() ? "" : " " + c.text);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Golden prompts of stories260K.

nlohmann::json load_json(const std::string& path) {
  return nlohmann::json::parse(test::read_file(path));
}

TEST(SpmGolden, Stories260KPromptsTokenizeLikeLlamaCpp) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  HEARTH_SHARED_OR_SKIP(index_path, "golden/stories260K/index.json");
  const Tokenizer& tok = test::load_tokenizer(model);
  const auto index = load_json(index_path);
  size_t n = 0;
  for (const auto& c : index.at("cases")) {
    const auto g =
        load_json(test::shared_path("golden/stories260K/" + c.at("file").get<std::string>()));
    const std::string prompt = g.at("prompt").get<std::string>();
    ASSERT_EQ(prompt, test::from_hex(g.at("prompt_utf8_hex").get<std::string>()));
    const auto expected = g.at("prompt_ids").get<std::vector<TokenId>>();
    const auto ids = tok.encode(prompt, /*add_special=*/true, /*parse_special=*/true);
    EXPECT_EQ(ids, expected) << c.at("name") << " " << escaped(prompt) << "\n  expected "
                             << ids_str(expected) << "\n  got      " << ids_str(ids);
    // The pieces llama-server reports (special tokens rendered; lone bytes as byte lists).
    const auto& pieces = g.at("prompt_pieces");
    ASSERT_EQ(pieces.size(), expected.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      std::string want;
      if (pieces[i].is_string()) {
        want = pieces[i].get<std::string>();
      } else {
        for (const auto& b : pieces[i]) want += static_cast<char>(b.get<int>());
      }
      EXPECT_EQ(tok.token_to_piece(expected[i], /*render_special=*/true), want)
          << c.at("name") << " piece " << i;
    }
    // Plain-text prompts: parse_special changes nothing, and decoding gives the prompt back.
    EXPECT_EQ(tok.encode(prompt, true, false), expected);
    EXPECT_EQ(tok.decode(ids, {.strip_space_prefix = true}), prompt);
    ++n;
  }
  EXPECT_EQ(n, 13u);
}

TEST(SpmGolden, ReadmeExample) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const Tokenizer& tok = test::load_tokenizer(model);
  EXPECT_EQ(tok.encode("Once upon a time"), (std::vector<TokenId>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok.encode("\n", false), (std::vector<TokenId>{410, 13}));  // "▁" then <0x0A>
  EXPECT_EQ(tok.encode("\t", false), (std::vector<TokenId>{410, 12}));
}

// ---------------------------------------------------------------------------------------------
// Special token text: parse_special on and off.

TEST(SpmSpecial, ParseSpecialOnAndOff) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const Tokenizer& tok = test::load_tokenizer(model);
  auto plain = [&](const std::string& s) { return tok.encode(s, false, false); };
  auto concat = [](std::initializer_list<std::vector<TokenId>> parts) {
    std::vector<TokenId> out;
    for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };

  // On: control texts become their ids; each text fragment after a special token gets the
  // space prefix again (llama.cpp's is_prev_special rule).
  EXPECT_EQ(tok.encode("<s>Once</s>", false, true), (std::vector<TokenId>{1, 403, 2}));
  EXPECT_EQ(tok.encode("<s>Once</s>", true, true), (std::vector<TokenId>{1, 1, 403, 2}));
  EXPECT_EQ(tok.encode("Once upon</s>a time", false, true),
            concat({plain("Once upon"), {2}, plain("a time")}));
  EXPECT_EQ(tok.encode(" x<s> y", false, true), concat({plain(" x"), {1}, plain(" y")}));
  EXPECT_EQ(tok.encode("<unk>", false, true), (std::vector<TokenId>{0}));
  EXPECT_EQ(tok.encode("</s></s>", false, true), (std::vector<TokenId>{2, 2}));
  EXPECT_EQ(tok.encode("<s", false, true), plain("<s"));

  // Off: the same texts are plain text, no control id appears and the text round-trips.
  for (const std::string s : {"<s>Once</s>", "<unk>", "a</s>b", "<s><s>"}) {
    const auto ids = tok.encode(s, false, false);
    for (TokenId id : ids) EXPECT_FALSE(tok.vocab().is_control(id) || id == 0) << s;
    EXPECT_EQ(tok.decode(ids, {.strip_space_prefix = true}), s);
  }
  // Rendering: control tokens are empty unless asked for.
  const std::vector<TokenId> ids = {1, 403, 2};
  EXPECT_EQ(tok.decode(ids), " Once");
  EXPECT_EQ(tok.decode(ids, {.render_special = true}), "<s> Once</s>");
}

TEST(SpmSpecial, Phi3UserDefinedTokensSplitEvenWithoutParseSpecial) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-phi-3.gguf");
  const Tokenizer& tok = test::load_tokenizer(path);
  auto plain = [&](const std::string& s) { return tok.encode(s, false, false); };
  // "</s>" is USER_DEFINED here (and RSTRIP: the whitespace after it goes).
  std::vector<TokenId> want = plain("Hi");
  want.push_back(2);
  const auto rest = plain("there");
  want.insert(want.end(), rest.begin(), rest.end());
  EXPECT_EQ(tok.encode("Hi</s>  there", false, false), want);
  // CONTROL "<|end|>" only with parse_special; RSTRIP drops the newline after it.
  const auto off = plain("a<|end|>b");
  EXPECT_EQ(std::count(off.begin(), off.end(), 32007), 0);
  const auto on = tok.encode("<|user|>\nHi<|end|>\n<|assistant|>", false, true);
  std::vector<TokenId> expect_on = {32010};
  const auto hi = plain("Hi");
  expect_on.insert(expect_on.end(), hi.begin(), hi.end());
  expect_on.push_back(32007);
  expect_on.push_back(32001);
  EXPECT_EQ(on, expect_on) << ids_str(on);
}

// ---------------------------------------------------------------------------------------------
// Robustness: random and invalid input never crash, and the bytes come back.

std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> atoms = {"a",
                                                 "e",
                                                 "the",
                                                 " ",
                                                 "  ",
                                                 "\n",
                                                 "\t",
                                                 "Once",
                                                 " upon",
                                                 ",",
                                                 ".",
                                                 "!",
                                                 "3",
                                                 "\xC3\xA9",
                                                 "\xC3\xAB",
                                                 "\xE2\x80\x9C",
                                                 "\xE2\x80\x94",
                                                 "\xE4\xBD\xA0",
                                                 "\xF0\x9F\x90\xB6",
                                                 "<s>",
                                                 "</s>",
                                                 "<unk>",
                                                 "<0x41>",
                                                 "\xE2\x96",
                                                 "\x81",
                                                 "\x80",
                                                 "\xC3",
                                                 "\xE2\x96",
                                                 "\xF0\x9F\x90",
                                                 "\xFF",
                                                 "\xC0\xAF",
                                                 "\xED\xA0\x80",
                                                 std::string(1, '\0')};
  // No U+2581 (see LiteralU2581DecodesAsSpace): removing one may form another, so loop.
  std::string s;
  const int n = static_cast<int>(rng() % 24);
  for (int i = 0; i < n; ++i) {
    switch (rng() % 3) {
      case 0:
        s += atoms[rng() % atoms.size()];
        break;
      case 1:
        s += static_cast<char>(rng() % 256);
        break;
      default:
        s += static_cast<char>('a' + rng() % 26);
        break;
    }
  }
  for (std::string cleaned; (cleaned = replace_all(s, kSpmSpace, "")) != s;) s = cleaned;
  return s;
}

TEST(SpmRobustness, RandomBytesRoundTripThroughByteFallback) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const Tokenizer& tok = test::load_tokenizer(model);
  std::mt19937 rng(20240601);
  for (int iter = 0; iter < 5000; ++iter) {
    const std::string text = random_text(rng);
    const bool add_special = rng() % 2;
    const auto ids = tok.encode(text, add_special, /*parse_special=*/false);
    for (TokenId id : ids) ASSERT_TRUE(tok.vocab().valid_id(id));
    ASSERT_EQ(tok.decode(ids, {.strip_space_prefix = true}), text)
        << escaped(text) << " -> " << ids_str(ids);
    // With special parsing the result only differs where special texts occur.
    const auto special = tok.encode(text, add_special, /*parse_special=*/true);
    for (TokenId id : special) ASSERT_TRUE(tok.vocab().valid_id(id));
    if (text.find("<s>") == std::string::npos && text.find("</s>") == std::string::npos &&
        text.find("<unk>") == std::string::npos) {
      ASSERT_EQ(special, ids) << escaped(text);
    }
  }
}

// The one lossy spot of SPM text: U+2581 is SentencePiece's space, so a literal U+2581 that
// ends up inside a NORMAL token decodes as a space (as in llama.cpp and SentencePiece).
TEST(SpmRobustness, LiteralU2581DecodesAsSpace) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const Tokenizer& tok = test::load_tokenizer(model);
  const std::string text = "a" + kSp + "b";
  const auto ids = tok.encode(text, false);
  EXPECT_EQ(ids, tok.encode("a b", false));
  EXPECT_EQ(tok.decode(ids, {.strip_space_prefix = true}), "a b");
}

TEST(SpmRobustness, RandomBytesOnALargeVocabulary) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/ggml-vocab-llama-spm.gguf");
  const Tokenizer& tok = test::load_tokenizer(path);
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    const std::string text = random_text(rng);
    const auto ids = tok.encode(text, true, false);
    ASSERT_EQ(tok.decode(ids, {.strip_space_prefix = true}), text)
        << escaped(text) << " -> " << ids_str(ids);
    (void)tok.encode(text, true, true);
  }
}

// ---------------------------------------------------------------------------------------------
// No quadratic behaviour: 100 KB texts tokenize quickly. (A loose regression guard, not a
// benchmark: the bound is far above the expected time, also under sanitizers.)

// Long inputs of several shapes round-trip. Speed is measured by the tokenizer benchmark, not
// here: wall-clock bounds flake on a shared machine (and under ASan); ctest's timeout still
// catches a quadratic blow-up.
TEST(SpmLongInputs, HundredKilobyteTextsRoundTrip) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const Tokenizer& tok = test::load_tokenizer(model);
  std::mt19937 rng(3);
  std::string story, no_spaces, bytes, specials;
  while (story.size() < 100000) story += "Once upon a time, there was a little girl named Lily. ";
  no_spaces.assign(100000, 'a');
  while (bytes.size() < 100000) bytes += static_cast<char>(rng() % 256);
  for (std::string cleaned; (cleaned = replace_all(bytes, kSpmSpace, "")) != bytes;) {
    bytes = cleaned;
  }
  while (specials.size() < 100000) specials += "<s>x</s>";
  for (const std::string* text : {&story, &no_spaces, &bytes, &specials}) {
    const auto ids = tok.encode(*text, true, true);
    EXPECT_GT(ids.size(), 1000u);
    if (text != &specials) {
      EXPECT_EQ(tok.decode(ids, {.strip_space_prefix = true}), *text);
    }
  }
  if (test::shared_exists("tokenizers/ggml-vocab-llama-spm.gguf")) {
    const Tokenizer& big =
        test::load_tokenizer(test::shared_path("tokenizers/ggml-vocab-llama-spm.gguf"));
    for (const std::string* text : {&story, &bytes}) {
      const auto ids = big.encode(*text, true, true);
      EXPECT_EQ(big.decode(ids, {.strip_space_prefix = true}), *text);
    }
  }
}

}  // namespace
}  // namespace hearth
