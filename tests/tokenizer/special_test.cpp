// split_special_tokens finds the special tokens that occur with one pass over a trie; the
// splitting itself must stay exactly llama.cpp's (tokenizer_st_partition): every token, longest
// first, splits what the longer ones left, leftmost match first. The reference below is that
// algorithm written plainly (one full scan of the text per special token).
#include "tokenizer/special.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "tok_test_util.h"

namespace hearth {
namespace {

bool ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

std::vector<Fragment> reference_split(const Vocab& vocab, std::string_view text,
                                      bool parse_special) {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({kNoToken, 0, text.size()});
  for (const TokenId id : vocab.special_tokens()) {
    const uint32_t attr = vocab.attr(id);
    if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
    const std::string_view special = vocab.text(id);
    std::vector<Fragment> next;
    for (const Fragment& f : frags) {
      if (f.is_token()) {
        next.push_back(f);
        continue;
      }
      size_t pos = f.offset;
      const size_t end = f.offset + f.length;
      while (pos < end) {
        const size_t match = text.substr(0, end).find(special, pos);
        if (match == std::string_view::npos) break;
        size_t left_end = match;
        if (attr & kAttrLStrip) {
          while (left_end > pos && ascii_space(text[left_end - 1])) --left_end;
        }
        if (left_end > pos) next.push_back({kNoToken, pos, left_end - pos});
        next.push_back({id, 0, 0});
        pos = match + special.size();
        if (attr & kAttrRStrip) {
          while (pos < end && ascii_space(text[pos])) ++pos;
        }
      }
      if (pos < end) next.push_back({kNoToken, pos, end - pos});
    }
    frags.swap(next);
  }
  return frags;
}

std::string describe(const std::vector<Fragment>& frags) {
  std::string s;
  for (const Fragment& f : frags) {
    if (f.is_token()) {
      s.append("[").append(std::to_string(f.token)).append("]");
    } else {
      s.append("(").append(std::to_string(f.offset)).append(",");
      s.append(std::to_string(f.length)).append(")");
    }
  }
  return s;
}

TEST(SpecialSplit, TrieScanAgreesWithPerTokenScan) {
  // Overlapping and nested special texts, strip attributes, CONTROL and USER_DEFINED.
  VocabData d = test::toy_spm_data(
      {{"<a>", 0}, {"<a><b>", 0}, {"b>", 0}, {"<b", 0}, {"  ", 0}, {"x", 0}, {"<|im|>", 0}});
  d.types[259] = 3;
  d.types[260] = 4;
  d.types[261] = 4;
  d.types[262] = 3;
  d.types[263] = 4;
  d.types[264] = 4;
  d.types[265] = 3;
  d.name = "phi-3";  // RSTRIP on the special tokens
  std::vector<Vocab> vocabs;
  vocabs.push_back(Vocab::build(d));
  d.name = "";
  vocabs.push_back(Vocab::build(d));
  for (const char* f : {"tokenizers/ggml-vocab-deepseek-llm.gguf", "tokenizers/ggml-vocab-mpt.gguf",
                        "tokenizers/ggml-vocab-phi-3.gguf", "tokenizers/vocab-qwen3.gguf"}) {
    if (test::shared_exists(f))
      vocabs.push_back(test::load_tokenizer(test::shared_path(f)).vocab());
  }
  const std::vector<std::string> atoms = {"<a>",
                                          "<b>",
                                          "<a><b>",
                                          "b>",
                                          "<b",
                                          " ",
                                          "  ",
                                          "   ",
                                          "x",
                                          "y",
                                          "<|im|>",
                                          "<|im_start|>",
                                          "<|im_end|>",
                                          "<think>",
                                          "[PAD100015]",
                                          "[PAD1000",
                                          "<|endoftext|>",
                                          "</s>",
                                          "<s>",
                                          "<|end|>",
                                          "\n",
                                          "<",
                                          "|",
                                          "<｜begin▁of▁sentence｜>"};
  std::mt19937 rng(1234);
  for (size_t k = 0; k < vocabs.size(); ++k) {
    const Vocab& v = vocabs[k];
    const int iters = k < 2 ? 1500 : 300;  // the reference is slow on 2400 special tokens
    for (int iter = 0; iter < iters; ++iter) {
      std::string text;
      for (size_t i = 0, n = rng() % 16; i < n; ++i) text += atoms[rng() % atoms.size()];
      for (const bool ps : {false, true}) {
        const auto got = split_special_tokens(v, text, ps);
        const auto want = reference_split(v, text, ps);
        ASSERT_EQ(describe(got), describe(want)) << test::escaped(text) << " parse_special=" << ps;
      }
    }
  }
}

}  // namespace
}  // namespace hearth
