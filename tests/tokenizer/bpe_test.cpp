#include "tokenizer/bpe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::escaped;
using test::ids_str;
using Ids = std::vector<TokenId>;

// ---------------------------------------------------------------------------------------------
// Hand-made byte-level vocabularies: ids 0..255 are the byte characters (id == byte), then
// `extra` (raw text, stored byte-level) from 256 on.

VocabData toy_bpe(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                  const std::string& pre = "gpt-2") {
  VocabData d;
  d.model = "gpt2";
  d.pre = pre;
  for (int b = 0; b < 256; ++b) d.tokens.emplace_back(byte_level_char(static_cast<uint8_t>(b)));
  for (const std::string& e : extra) {
    std::string t;
    byte_level_encode_append(e, t);
    d.tokens.push_back(t);
  }
  for (const std::string& m : merges) {
    // "left right" in raw text -> byte-level
    const size_t sp = m.find(' ', 1);
    std::string l, r;
    byte_level_encode_append(m.substr(0, sp), l);
    byte_level_encode_append(m.substr(sp + 1), r);
    d.merges.push_back(l + " " + r);
  }
  return d;
}

Ids encode(const Tokenizer& t, const std::string& text) {
  return t.encode(text, false, false);
}

TEST(BpeMerge, LowestRankFirst) {
  const Tokenizer a = Tokenizer::from_vocab(Vocab::build(toy_bpe({"ab", "bc"}, {"a b", "b c"})));
  EXPECT_EQ(encode(a, "abc"), (Ids{256, 'c'}));
  const Tokenizer b = Tokenizer::from_vocab(Vocab::build(toy_bpe({"ab", "bc"}, {"b c", "a b"})));
  EXPECT_EQ(encode(b, "abc"), (Ids{'a', 257}));
}

TEST(BpeMerge, LeftmostAmongEqualPairsAndChains) {
  const Tokenizer t =
      Tokenizer::from_vocab(Vocab::build(toy_bpe({"aa", "aaaa"}, {"a a", "aa aa"})));
  EXPECT_EQ(encode(t, "a"), (Ids{'a'}));
  EXPECT_EQ(encode(t, "aaa"), (Ids{256, 'a'}));
  EXPECT_EQ(encode(t, "aaaa"), (Ids{257}));
  EXPECT_EQ(encode(t, "aaaaa"), (Ids{257, 'a'}));
  EXPECT_EQ(encode(t, "aaaaaaa"), (Ids{257, 256, 'a'}));
  EXPECT_EQ(encode(t, "aa aa"), (Ids{256, ' ', 256}));  // " aa" is one pre-token: no merge
}

TEST(BpeMerge, HeapPathAgreesWithRankScanOnToyVocab) {
  const VocabData d =
      toy_bpe({"aa", "aaaa", "ab", "aab", "ba"}, {"a a", "a b", "aa aa", "a ab", "b a"});
  auto v = std::make_shared<const Vocab>(Vocab::build(d));
  const BpeModel scan(v, {.cache_entries = 0, .heap_merge_min = size_t{1} << 30});
  const BpeModel heap(v, {.cache_entries = 0, .heap_merge_min = 2});
  std::mt19937 rng(3);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string w;
    const size_t n = 1 + rng() % 90;
    for (size_t i = 0; i < n; ++i) w += "ab"[rng() % 2];
    Ids x, y;
    scan.encode_word(w, x);
    heap.encode_word(w, y);
    ASSERT_EQ(x, y) << w;
  }
}

TEST(BpeMerge, MergesOutsideTheVocabularyAreSkipped) {
  const Tokenizer t = Tokenizer::from_vocab(Vocab::build(toy_bpe({"ab"}, {"a b", "x y", "q ab"})));
  EXPECT_EQ(t.bpe()->n_merges(), 1u);
  EXPECT_EQ(t.bpe()->n_skipped_merges(), 2u);  // "xy" and "qab" are no tokens
  EXPECT_EQ(encode(t, "xy"), (Ids{'x', 'y'}));
  EXPECT_EQ(encode(t, "qab"), (Ids{'q', 256}));
}

TEST(BpeMerge, IgnoreMergesEmitsWholeWordsThatAreTokens) {
  // "abc" is a token that no merge builds.
  const VocabData gpt2 = toy_bpe({"ab", "abc"}, {"a b"}, "gpt-2");
  VocabData llama3 = gpt2;
  llama3.pre = "llama-bpe";
  EXPECT_EQ(encode(Tokenizer::from_vocab(Vocab::build(gpt2)), "abc"), (Ids{256, 'c'}));
  const Tokenizer t = Tokenizer::from_vocab(Vocab::build(llama3));
  EXPECT_TRUE(t.bpe()->ignore_merges());
  EXPECT_EQ(encode(t, "abc"), (Ids{257}));
  EXPECT_EQ(encode(t, "abcabc"), (Ids{256, 'c', 256, 'c'}));  // not a token: merged as usual
}

TEST(BpeMerge, BadMergesAndMissingBytes) {
  VocabData d = toy_bpe({"ab"}, {"a b"});
  d.merges.push_back("ab");
  EXPECT_THROW(Tokenizer::from_vocab(Vocab::build(d)), Error);

  // A vocabulary without the byte 'z': an error without an unknown token, else the unknown.
  VocabData no_z = toy_bpe({"ab"}, {"a b"});
  no_z.tokens['z'] = "<unused-z>";
  const Tokenizer t = Tokenizer::from_vocab(Vocab::build(no_z));
  EXPECT_EQ(encode(t, "ab"), (Ids{256}));
  EXPECT_THROW(encode(t, "az"), Error);
  no_z.unk_id = 'z';
  const Tokenizer u = Tokenizer::from_vocab(Vocab::build(no_z));
  EXPECT_EQ(encode(u, "az"), (Ids{'a', 'z'}));
}

TEST(BpeMerge, UnknownPreTokenizerFallsBackToGpt2) {
  const Tokenizer t = Tokenizer::from_vocab(Vocab::build(toy_bpe({"ab"}, {"a b"}, "made-up-pre")));
  EXPECT_FALSE(t.bpe()->pre_info().known);
  EXPECT_EQ(t.bpe()->pre_info().family, "gpt-2");
  EXPECT_EQ(encode(t, "ab ab"), (Ids{256, ' ', 256}));
}

TEST(BpeCache, BoundedAndTransparent) {
  const VocabData d = toy_bpe({"aa", "aaaa"}, {"a a", "aa aa"});
  auto v = std::make_shared<const Vocab>(Vocab::build(d));
  const BpeModel cached(v, {.cache_entries = 64});
  const BpeModel plain(v, {.cache_entries = 0});
  std::mt19937 rng(5);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string text;
    for (size_t i = 0, n = rng() % 30; i < n; ++i) text += "ab a\n"[rng() % 5];
    ASSERT_EQ(cached.tokenize(text, false, false), plain.tokenize(text, false, false)) << text;
  }
  const auto st = cached.cache_stats();
  EXPECT_LE(st.entries, 64u);
  EXPECT_GT(st.hits, 0u);
  EXPECT_EQ(plain.cache_stats().entries, 0u);
  cached.clear_cache();
  EXPECT_EQ(cached.cache_stats().entries, 0u);
  EXPECT_EQ(cached.cache_stats().hits, 0u);
}

// ---------------------------------------------------------------------------------------------
// Real vocabularies.

struct BpeVocab {
  const char* name;
  const char* file;
};
const BpeVocab kBpeVocabs[] = {{"gpt-2", "ggml-vocab-gpt-2.gguf"},
                               {"mpt", "ggml-vocab-mpt.gguf"},
                               {"deepseek-llm", "ggml-vocab-deepseek-llm.gguf"},
                               {"qwen3", "vocab-qwen3.gguf"},
                               {"llama3", "vocab-llama3.gguf"}};

#define LOAD_OR_SKIP(var, file)                                         \
  HEARTH_SHARED_OR_SKIP(var##_path, std::string("tokenizers/") + file); \
  const Tokenizer& var = test::load_tokenizer(var##_path)

// A non-owning handle on a cached tokenizer's vocabulary (the cache lives until exit).
std::shared_ptr<const Vocab> borrow(const Tokenizer& t) {
  return std::shared_ptr<const Vocab>(&t.vocab(), [](const Vocab*) {});
}

TEST(BpeReal, KnownIdsAndBos) {
  LOAD_OR_SKIP(llama3, "vocab-llama3.gguf");
  LOAD_OR_SKIP(qwen3, "vocab-qwen3.gguf");
  EXPECT_EQ(llama3.encode("Hello world", false), (Ids{9906, 1917}));
  EXPECT_EQ(llama3.encode("Hello world", true), (Ids{128000, 9906, 1917}));  // add_bos true
  EXPECT_EQ(qwen3.encode("Hello world", false), (Ids{9707, 1879}));
  EXPECT_EQ(qwen3.encode("Hello world", true), (Ids{9707, 1879}));  // add_bos false
  EXPECT_TRUE(llama3.vocab().add_bos());
  EXPECT_FALSE(qwen3.vocab().add_bos());
  EXPECT_EQ(llama3.eos(), 128001);
  EXPECT_EQ(llama3.vocab().eot(), 128009);
  EXPECT_TRUE(llama3.is_eog(128009));
  EXPECT_EQ(qwen3.eos(), 151645);
  EXPECT_TRUE(qwen3.is_eog(151643));  // <|endoftext|>
  EXPECT_EQ(qwen3.encode("", true), Ids{});
  EXPECT_EQ(llama3.encode("", true), Ids{128000});
  EXPECT_TRUE(llama3.bpe()->ignore_merges());
  EXPECT_FALSE(qwen3.bpe()->ignore_merges());
  EXPECT_EQ(llama3.bpe()->n_skipped_merges(), 0u);
  EXPECT_EQ(qwen3.bpe()->n_skipped_merges(), 0u);
}

TEST(BpeReal, DeepseekAndGpt2Bos) {
  LOAD_OR_SKIP(deepseek, "ggml-vocab-deepseek-llm.gguf");
  LOAD_OR_SKIP(gpt2, "ggml-vocab-gpt-2.gguf");
  EXPECT_EQ(deepseek.encode("Hello", true).front(), 100000);  // add_bos_token = true in the file
  EXPECT_EQ(gpt2.encode("Hello", true), gpt2.encode("Hello", false));  // no add_bos key: false
}

TEST(BpeReal, ParseSpecialQwen3) {
  LOAD_OR_SKIP(qwen3, "vocab-qwen3.gguf");
  const std::string chat = "<|im_start|>user\nHi<|im_end|>\n";
  // On: the chat markers are their CONTROL tokens.
  EXPECT_EQ(qwen3.encode(chat, false, true), (Ids{151644, 872, 198, 13048, 151645, 198}));
  // Off: a user's message that contains the marker is literal text.
  const Ids off = qwen3.encode(chat, false, false);
  for (const TokenId id : off) EXPECT_FALSE(qwen3.vocab().is_control(id)) << ids_str(off);
  EXPECT_EQ(qwen3.decode(off), chat);
  EXPECT_GT(qwen3.encode("<|im_start|>", false, false).size(), 1u);
  // USER_DEFINED tokens (<think>) are split off even without parse_special.
  const TokenId think = qwen3.vocab().find("<think>");
  ASSERT_TRUE(qwen3.vocab().is_user_defined(think));
  const Ids t = qwen3.encode("a<think>b", false, false);
  EXPECT_NE(std::find(t.begin(), t.end(), think), t.end()) << ids_str(t);
  // Rendering: control tokens only when asked for; user-defined always.
  const Ids on = qwen3.encode(chat + "<think>", false, true);
  EXPECT_EQ(qwen3.decode(on), "user\nHi\n<think>");
  EXPECT_EQ(qwen3.decode(on, {.render_special = true}), chat + "<think>");
}

TEST(BpeReal, ParseSpecialLlama3) {
  LOAD_OR_SKIP(llama3, "vocab-llama3.gguf");
  const std::string text =
      "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>";
  const Ids on = llama3.encode(text, false, true);
  EXPECT_EQ(on.front(), 128000);
  EXPECT_EQ(on.back(), 128009);
  EXPECT_EQ(std::count(on.begin(), on.end(), 128006), 1);  // <|start_header_id|>
  // With add_special and a literal BOS text, both BOS tokens appear (as in llama.cpp).
  EXPECT_EQ(llama3.encode("<|begin_of_text|>Hi", true, true), (Ids{128000, 128000, 13347}));
  const Ids off = llama3.encode(text, false, false);
  EXPECT_EQ(std::find(off.begin(), off.end(), 128000), off.end());
  for (const TokenId id : off) EXPECT_FALSE(llama3.vocab().is_control(id));
  EXPECT_EQ(llama3.decode(off), text);
  EXPECT_EQ(llama3.decode(on, {.render_special = true}), text);
  EXPECT_EQ(llama3.token_to_piece(128000), "");
  EXPECT_EQ(llama3.token_to_piece(128000, true), "<|begin_of_text|>");
  EXPECT_EQ(llama3.token_to_piece(1917), " world");
}

TEST(BpeReal, VectorStringsRoundTripAndStream) {
  for (const BpeVocab& bv : kBpeVocabs) {
    const std::string rel = std::string("tokenizers/") + bv.file;
    if (!test::shared_exists(rel)) GTEST_SKIP() << "no " << rel;
    const std::string base = test::shared_path(rel);
    const Tokenizer& tok = test::load_tokenizer(base);
    for (const auto& c : test::read_vocab_cases(base)) {
      for (const bool add_special : {false, true}) {
        const Ids ids = tok.encode(c.text, add_special, false);
        ASSERT_EQ(tok.decode(ids), c.text) << bv.name << " " << escaped(c.text);
        StreamingDetokenizer d = tok.streaming_detokenizer();
        std::string streamed;
        for (const TokenId id : ids) {
          const std::string chunk = d.push(id);
          ASSERT_TRUE(utf8_is_valid(chunk)) << bv.name << " " << escaped(c.text);
          streamed += chunk;
        }
        streamed += d.flush();
        ASSERT_EQ(streamed, c.text) << bv.name << " " << escaped(c.text);
      }
    }
  }
}

// Random texts: atoms that stress the pre-tokenizers and the special-token splitter, plus raw
// random bytes (so ill-formed UTF-8 of every kind).
std::string random_text(std::mt19937& rng) {
  static const std::vector<std::string> atoms = {" ",
                                                 "  ",
                                                 "\n",
                                                 "\t",
                                                 "\r\n",
                                                 "a",
                                                 "The",
                                                 " world",
                                                 "'s",
                                                 "'LL",
                                                 "123",
                                                 "4",
                                                 ".",
                                                 "!!",
                                                 "(",
                                                 "==",
                                                 "\xC3\xA9",
                                                 "\xE4\xBD\xA0",
                                                 "\xE5\xA5\xBD",
                                                 "\xF0\x9F\xA6\x99",
                                                 "\xE2\x80\x8D",
                                                 "\xC2\x85",
                                                 "<|im_start|>",
                                                 "<|im_end|>",
                                                 "<think>",
                                                 "<|begin_of_text|>",
                                                 "<|eot_id|>",
                                                 "[PAD100015]",
                                                 "<|endoftext|>",
                                                 "<｜begin▁of▁sentence｜>",
                                                 "                ",
                                                 "\xC4\xA0",
                                                 "\xE2\x96\x81",
                                                 "\xFF",
                                                 "\x80",
                                                 "\xC3",
                                                 "\xE4\xBD",
                                                 "\xF0\x9F\xA6",
                                                 "\xED\xA0\x80",
                                                 "\xC0\xAF",
                                                 std::string(1, '\0')};
  std::string s;
  const int n = static_cast<int>(rng() % 24);
  for (int i = 0; i < n; ++i) {
    if (rng() % 3 == 0) {
      s += static_cast<char>(rng() % 256);
    } else {
      s += atoms[rng() % atoms.size()];
    }
  }
  return s;
}

// True when every byte of `text` has a NORMAL byte-level token. Always so for well-formed UTF-8
// in the vocabularies here; MPT has no token for the 13 bytes that never occur in UTF-8 (C0,
// C1, F5..FF: they encode to its unknown token) and DeepSeek has them as USER_DEFINED tokens
// (which render as their 2-byte text), so ill-formed text with those bytes cannot round-trip.
bool representable(const Vocab& v, std::string_view text) {
  for (const char c : text) {
    const TokenId id = v.byte_to_token(static_cast<uint8_t>(c));
    if (id == kNoToken || !v.is_normal(id)) return false;
  }
  return true;
}

TEST(BpeRobustness, RandomBytesRoundTripExactly) {
  for (const BpeVocab& bv : kBpeVocabs) {
    const std::string rel = std::string("tokenizers/") + bv.file;
    if (!test::shared_exists(rel)) GTEST_SKIP() << "no " << rel;
    const Tokenizer& tok = test::load_tokenizer(test::shared_path(rel));
    std::mt19937 rng(20240901);
    size_t checked = 0;
    for (int iter = 0; iter < 1500; ++iter) {
      const std::string text = random_text(rng);
      const bool add_special = rng() % 2;
      const Ids ids = tok.encode(text, add_special, false);
      for (const TokenId id : ids) ASSERT_TRUE(tok.vocab().valid_id(id)) << bv.name;
      const Ids sp = tok.encode(text, false, true);
      for (const TokenId id : sp) ASSERT_TRUE(tok.vocab().valid_id(id)) << bv.name;
      if (utf8_is_valid(text)) {
        ASSERT_TRUE(representable(tok.vocab(), text)) << bv.name;
      }
      if (representable(tok.vocab(), text)) {
        ++checked;
        // Byte-level BPE keeps every byte, valid UTF-8 or not.
        ASSERT_EQ(tok.decode(ids), text) << bv.name << " " << escaped(text) << " " << ids_str(ids);
        // With special parsing, rendering the specials gives the text back.
        ASSERT_EQ(tok.decode(sp, {.render_special = true}), text)
            << bv.name << " " << escaped(text);
      }
      // Streaming: valid UTF-8 chunks, concatenating to the sanitized text.
      StreamingDetokenizer d = tok.streaming_detokenizer();
      std::string streamed;
      for (const TokenId id : ids) {
        const std::string chunk = d.push(id);
        ASSERT_TRUE(utf8_is_valid(chunk));
        streamed += chunk;
      }
      streamed += d.flush();
      ASSERT_EQ(streamed, utf8_sanitize(tok.decode(ids))) << bv.name << " " << escaped(text);
    }
    EXPECT_GT(checked, 500u) << bv.name;
  }
}

TEST(BpeRobustness, BytesThatNeverOccurInUtf8) {
  LOAD_OR_SKIP(mpt, "ggml-vocab-mpt.gguf");
  LOAD_OR_SKIP(qwen3, "vocab-qwen3.gguf");
  // MPT lacks them: the unknown token (its <|endoftext|>), never a failure.
  EXPECT_EQ(mpt.encode("a\xC0", false), (Ids{mpt.vocab().find("a"), 0}));
  // Vocabularies with all 256 bytes keep them exactly.
  EXPECT_EQ(qwen3.decode(qwen3.encode("a\xC0\xFF", false)), "a\xC0\xFF");
}

TEST(BpeRobustness, LongWordsHeapMergeAgreesWithRankScan) {
  LOAD_OR_SKIP(qwen3, "vocab-qwen3.gguf");
  LOAD_OR_SKIP(llama3, "vocab-llama3.gguf");
  for (const Tokenizer* tok : {&qwen3, &llama3}) {
    const BpeModel scan(borrow(*tok), {.cache_entries = 0, .heap_merge_min = size_t{1} << 30});
    const BpeModel heap(borrow(*tok), {.cache_entries = 0, .heap_merge_min = 2});
    std::mt19937 rng(11);
    static const std::vector<std::string> parts = {
        "a", "b", "er", "ing", "tion", "\xE4\xBD\xA0", "\xE5\xA5\xBD", "0", "\xFF", "_", "-", "="};
    for (int iter = 0; iter < 300; ++iter) {
      std::string w;
      const size_t n = 1 + rng() % 60;
      for (size_t i = 0; i < n; ++i) w += parts[rng() % parts.size()];
      Ids x, y, z;
      scan.encode_word(w, x);
      heap.encode_word(w, y);
      tok->bpe()->encode_word(w, z);
      ASSERT_EQ(x, y) << escaped(w);
      ASSERT_EQ(x, z) << escaped(w);
    }
  }
}

TEST(BpeRobustness, LongInputs) {
  LOAD_OR_SKIP(llama3, "vocab-llama3.gguf");
  LOAD_OR_SKIP(qwen3, "vocab-qwen3.gguf");
  std::string cjk;
  for (int i = 0; i < 20000; ++i) cjk += (i % 3 == 0) ? "\xE4\xBD\xA0" : "\xE5\xA5\xBD";
  const std::vector<std::string> texts = {std::string(100000, ' ') + "x",
                                          std::string(50000, 'a'),
                                          std::string(60000, '7'),
                                          std::string(30000, '\n'),
                                          cjk,
                                          std::string(20000, '\xFF')};
  for (const Tokenizer* tok : {&llama3, &qwen3}) {
    for (const std::string& text : texts) {
      const Ids ids = tok->encode(text, false, false);
      ASSERT_FALSE(ids.empty());
      ASSERT_EQ(tok->decode(ids), text);
    }
  }
}

TEST(BpeThreads, ConcurrentEncodeMatchesSequential) {
  LOAD_OR_SKIP(qwen3, "vocab-qwen3.gguf");
  // A tiny cache, so that threads evict each other's entries all the time.
  const BpeModel model(borrow(qwen3), {.cache_entries = 64});
  std::mt19937 rng(99);
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i) texts.push_back(random_text(rng));
  std::vector<Ids> expected;
  for (const auto& t : texts) expected.push_back(qwen3.encode(t, false, true));
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int rep = 0; rep < 3; ++rep) {
        for (size_t i = static_cast<size_t>(k); i < texts.size(); i += 2) {
          if (model.tokenize(texts[i], false, true) != expected[i])
            ++failures[static_cast<size_t>(k)];
          if (qwen3.encode(texts[i], false, true) != expected[i])
            ++failures[static_cast<size_t>(k)];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const int f : failures) EXPECT_EQ(f, 0);
}

}  // namespace
}  // namespace hearth
