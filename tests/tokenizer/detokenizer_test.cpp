#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"
#include "util/error.h"

namespace hearth {
namespace {

using test::escaped;
using test::ids_str;

const std::string kFFFD(kReplacementChar);
const std::string kSp(kSpmSpace);

// Feeds `ids` one at a time; checks every chunk is valid UTF-8; returns the concatenation.
std::string stream_all(StreamingDetokenizer& d, const std::vector<TokenId>& ids) {
  std::string all;
  for (TokenId id : ids) {
    const std::string chunk = d.push(id);
    EXPECT_TRUE(utf8_is_valid(chunk)) << "chunk " << escaped(chunk) << " after id " << id;
    EXPECT_LE(d.pending_bytes(), 3u);
    all += chunk;
  }
  const std::string tail = d.flush();
  EXPECT_TRUE(utf8_is_valid(tail));
  EXPECT_EQ(d.pending_bytes(), 0u);
  return all + tail;
}

Vocab toy() {
  VocabData d = test::toy_spm_data({{kSp + "Hi", -1}, {"x" + kSp + "y", -2}, {"<tool>", 0}});
  d.types.back() = 4;  // USER_DEFINED: rendered verbatim, U+2581 included
  d.tokens.push_back("<unused0>");
  d.types.push_back(5);  // UNUSED
  d.scores.push_back(0);
  return Vocab::build(d);
}

TEST(Detokenizer, PiecesByTokenType) {
  const Vocab v = toy();
  EXPECT_EQ(token_to_piece(v, 259), " Hi");  // NORMAL: U+2581 -> space
  EXPECT_EQ(token_to_piece(v, 260), "x y");
  EXPECT_EQ(token_to_piece(v, 3 + 'A'), "A");  // BYTE
  EXPECT_EQ(token_to_piece(v, 3 + 0xF0), "\xF0");
  EXPECT_EQ(token_to_piece(v, 1), "");  // CONTROL
  EXPECT_EQ(token_to_piece(v, 1, true), "<s>");
  EXPECT_EQ(token_to_piece(v, 0), "");  // UNKNOWN
  EXPECT_EQ(token_to_piece(v, 0, true), "<unk>");
  EXPECT_EQ(token_to_piece(v, 261), "<tool>");  // USER_DEFINED
  EXPECT_EQ(token_to_piece(v, 262), "");        // UNUSED
  EXPECT_THROW(token_to_piece(v, 263), Error);
  EXPECT_THROW(token_to_piece(v, -1), Error);
}

TEST(Detokenizer, LeadingSpaceRule) {
  const Vocab v = toy();
  const std::vector<TokenId> ids = {1, 259, 259};
  EXPECT_EQ(decode(v, ids), " Hi Hi");  // default: pieces as generated (llama-server text)
  EXPECT_EQ(decode(v, ids, {.strip_space_prefix = true}), "Hi Hi");
  EXPECT_EQ(decode(v, std::vector<TokenId>{259}, {.strip_space_prefix = true}), "Hi");
  // Only one space, and only from the first piece that renders text.
  EXPECT_EQ(decode(v, std::vector<TokenId>{3 + ' ', 3 + ' ', 259}, {.strip_space_prefix = true}),
            "  Hi");
  EXPECT_EQ(decode(v, std::vector<TokenId>{3 + 'A', 259}, {.strip_space_prefix = true}), "A Hi");
  // With rendered specials "<s>" is the first text, so nothing is stripped.
  EXPECT_EQ(decode(v, ids, {.render_special = true, .strip_space_prefix = true}), "<s> Hi Hi");
  EXPECT_EQ(decode(v, std::vector<TokenId>{}), "");
}

TEST(StreamingDetokenizer, HoldsBackSplitCharacters) {
  const Vocab v = toy();
  StreamingDetokenizer d(v);
  EXPECT_EQ(d.push(259), " Hi");
  EXPECT_EQ(d.push(3 + 0xF0), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.push(3 + 0x9F), "");
  EXPECT_EQ(d.push(1), "");  // a control token in between changes nothing
  EXPECT_EQ(d.push(3 + 0x90), "");
  EXPECT_EQ(d.push(3 + 0xB6), "\xF0\x9F\x90\xB6");
  EXPECT_EQ(d.pending_bytes(), 0u);
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamingDetokenizer, InvalidSequencesBecomeReplacementCharacters) {
  const Vocab v = toy();
  StreamingDetokenizer d(v);
  EXPECT_EQ(d.push(3 + 0xC3), "");
  EXPECT_EQ(d.push(3 + 'a'), kFFFD + "a");  // the C3 was not followed by a continuation
  EXPECT_EQ(d.push(3 + 0x80), kFFFD);       // stray continuation byte: known bad at once
  EXPECT_EQ(d.push(3 + 0xE2), "");
  EXPECT_EQ(d.push(3 + 0x96), "");
  EXPECT_EQ(d.flush(), kFFFD);  // truncated at the end of the stream
  // flush() reset the state: a new stream.
  EXPECT_EQ(d.push(3 + 0xFF), kFFFD);
  EXPECT_EQ(d.push(259), " Hi");
}

TEST(StreamingDetokenizer, StripSpacePrefixOption) {
  const Vocab v = toy();
  StreamingDetokenizer d(v, {.strip_space_prefix = true});
  EXPECT_EQ(d.push(1), "");
  EXPECT_EQ(d.push(259), "Hi");
  EXPECT_EQ(d.push(259), " Hi");
  d.reset();
  EXPECT_EQ(d.push(259), "Hi");
}

TEST(StreamingDetokenizer, RandomIdsMatchOneShotDecode) {
  const Vocab v = toy();
  std::mt19937 rng(99);
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<TokenId> ids(rng() % 16);
    for (auto& id : ids) {
      // Mostly byte tokens, with a bias towards multi-byte lead and continuation bytes.
      const unsigned r = rng() % 10;
      if (r < 4) {
        id = 3 + static_cast<TokenId>(0x80 + rng() % 0x80);
      } else if (r < 8) {
        id = 3 + static_cast<TokenId>(rng() % 256);
      } else {
        id = static_cast<TokenId>(rng() % v.n_tokens());
      }
    }
    const DecodeOptions opts{.render_special = rng() % 2 == 0,
                             .strip_space_prefix = rng() % 2 == 0};
    StreamingDetokenizer d(v, opts);
    const std::string streamed = stream_all(d, ids);
    const std::string whole = decode(v, ids, opts);
    ASSERT_EQ(streamed, utf8_sanitize(whole)) << ids_str(ids);
    if (utf8_is_valid(whole)) {
      ASSERT_EQ(streamed, whole);
    }
  }
}

TEST(StreamingDetokenizer, OutlivesItsTokenizer) {
  auto tok = Tokenizer::from_vocab(toy());
  StreamingDetokenizer owned = tok.streaming_detokenizer();
  tok = Tokenizer::from_vocab(Vocab::build(test::toy_spm_data({})));  // drops the old vocabulary
  EXPECT_EQ(owned.push(259), " Hi");                                  // which `owned` still shares
}

// ---------------------------------------------------------------------------------------------
// Golden generations of stories260K.

TEST(DetokenizerGolden, GenerationsDecodeToLlamaCppText) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  HEARTH_SHARED_OR_SKIP(index_path, "golden/stories260K/index.json");
  const Tokenizer& tok = test::load_tokenizer(model);
  const auto index = nlohmann::json::parse(test::read_file(index_path));
  size_t n = 0;
  for (const auto& c : index.at("cases")) {
    const auto g = nlohmann::json::parse(test::read_file(
        test::shared_path("golden/stories260K/" + c.at("file").get<std::string>())));
    const auto& gen = g.at("generation");
    const auto ids = gen.at("ids").get<std::vector<TokenId>>();
    const std::string text = gen.at("text").get<std::string>();
    const std::string raw = test::from_hex(gen.at("text_utf8_hex").get<std::string>());
    const std::string name = c.at("name").get<std::string>();

    // One-shot: the raw piece bytes, and llama.cpp's text (which keeps the leading space of
    // the first generated piece; <s> renders as nothing).
    EXPECT_EQ(tok.decode(ids), raw) << name;
    EXPECT_EQ(tok.decode(ids), text) << name;
    // Per-step piece bytes.
    const auto& steps = gen.at("steps");
    ASSERT_EQ(steps.size(), ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      std::string piece;
      for (const auto& b : steps[i].at("piece_bytes")) piece += static_cast<char>(b.get<int>());
      EXPECT_EQ(tok.token_to_piece(ids[i]), piece) << name << " step " << i;
    }

    // Streaming gives the same text, for the generation alone and for prompt + generation
    // (the cjk_emoji prompt splits 🐶 and 你好 over byte tokens).
    auto d = tok.streaming_detokenizer();
    EXPECT_EQ(stream_all(d, ids), text) << name;
    std::vector<TokenId> all = g.at("prompt_ids").get<std::vector<TokenId>>();
    all.insert(all.end(), ids.begin(), ids.end());
    EXPECT_EQ(stream_all(d, all), tok.decode(all)) << name;
    ++n;
  }
  EXPECT_EQ(n, 13u);
}

TEST(DetokenizerGolden, CjkEmojiPromptStreamsWholeCharacters) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  HEARTH_SHARED_OR_SKIP(path, "golden/stories260K/cjk_emoji.json");
  const Tokenizer& tok = test::load_tokenizer(model);
  const auto g = nlohmann::json::parse(test::read_file(path));
  const auto ids = g.at("prompt_ids").get<std::vector<TokenId>>();
  auto d = tok.streaming_detokenizer({.strip_space_prefix = true});
  std::vector<std::string> chunks;
  for (TokenId id : ids) chunks.push_back(d.push(id));
  EXPECT_EQ(d.flush(), "");
  // [<s>, Lily, saw, a, ▁, F0, 9F, 90, B6, and, said, ▁, E4, BD, A0, E5, A5, BD, !]
  const std::vector<std::string> want = {"",     "Lily",  " saw",
                                         " a",   " ",     "",
                                         "",     "",      "\xF0\x9F\x90\xB6",
                                         " and", " said", " ",
                                         "",     "",      "\xE4\xBD\xA0",
                                         "",     "",      "\xE5\xA5\xBD",
                                         "!"};
  EXPECT_EQ(chunks, want);
  std::string joined;
  for (const auto& c : chunks) joined += c;
  EXPECT_EQ(joined, g.at("prompt").get<std::string>());
}

TEST(DetokenizerGolden, RandomStories260KIdsStreamLikeDecode) {
  HEARTH_SHARED_OR_SKIP(model, "models/stories260K.gguf");
  const Tokenizer& tok = test::load_tokenizer(model);
  std::mt19937 rng(5);
  for (int iter = 0; iter < 2000; ++iter) {
    std::vector<TokenId> ids(rng() % 32);
    for (auto& id : ids) id = static_cast<TokenId>(rng() % tok.n_vocab());
    auto d = tok.streaming_detokenizer();
    ASSERT_EQ(stream_all(d, ids), utf8_sanitize(tok.decode(ids))) << ids_str(ids);
  }
}

}  // namespace
}  // namespace hearth
