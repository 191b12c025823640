// The special-token rule, checked on every special token of every vocabulary in
// ../shared/tokenizers (index.json), rather than on a few hand-picked strings:
//  - CONTROL and UNKNOWN texts become their id only with parse_special (or, for
//    encode_with_control_ranges, only inside a given range); without it they are plain text;
//  - USER_DEFINED texts become their id whether parse_special is on or not, as in llama.cpp
//    (tokenizer_st_partition) and Hugging Face (non-special added tokens are always split out).
//    MPT's HF-made vectors depend on it (its runs of spaces are USER_DEFINED tokens), and it is
//    why a phi-3 text "</s>" is id 2 even without parse_special: phi-3 marks "</s>" USER_DEFINED;
//  - where special texts overlap, the longest one wins (each text alone gives its own id even
//    when a shorter special text is a prefix of it);
//  - RSTRIP / LSTRIP tokens swallow the whitespace after / before them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tok_test_util.h"
#include "tokenizer/special.h"
#include "tokenizer/tokenizer.h"

namespace hearth {
namespace {

using test::escaped;
using test::ids_str;

bool is_control_like(const Vocab& v, TokenId id) {
  return (v.attr(id) & (kAttrControl | kAttrUnknown)) != 0;
}

size_t count(const std::vector<TokenId>& ids, TokenId id) {
  return static_cast<size_t>(std::count(ids.begin(), ids.end(), id));
}

// True when another special token that splits before `id` (at least as long; and matched at
// all in this mode) occurs in `text` overlapping the copy of id's text at `pos`: then that one
// legitimately takes the place, and the context check for `id` does not apply.
bool preempted(const Vocab& v, TokenId id, const std::string& text, size_t pos,
               bool parse_special) {
  const size_t len = v.text(id).size();
  for (const TokenId other : v.special_tokens()) {
    const std::string& t = v.text(other);
    if (t.size() < len) break;  // special_tokens() is longest first
    if (other == id || (!parse_special && is_control_like(v, other))) continue;
    for (size_t at = text.find(t); at != std::string::npos; at = text.find(t, at + 1)) {
      if (at < pos + len && at + t.size() > pos) return true;
    }
  }
  return false;
}

struct Counts {
  size_t control = 0, user_defined = 0, stripped = 0;
};

// Every check for one special token; returns false at the first failure (reported).
bool check_token(const Tokenizer& tok, TokenId id, Counts& n) {
  const Vocab& v = tok.vocab();
  const std::string& s = v.text(id);
  const bool control = is_control_like(v, id);
  ++(control ? n.control : n.user_defined);
  const std::vector<TokenId> alone = {id};
  const std::string ctx = "a" + s + "b";

  const auto on = tok.encode(s, false, true);
  EXPECT_EQ(on, alone) << "parse_special on: " << escaped(s) << " -> " << ids_str(on);
  if (on != alone) return false;
  if (!preempted(v, id, ctx, 1, true)) {
    const auto on_ctx = tok.encode(ctx, false, true);
    EXPECT_EQ(count(on_ctx, id), 1u) << escaped(ctx) << " -> " << ids_str(on_ctx);
    if (count(on_ctx, id) != 1) return false;
  }

  const auto off = tok.encode(s, false, false);
  const auto off_ctx = tok.encode(ctx, false, false);
  if (control) {
    // Plain text: none of these vocabularies reaches a control id by ordinary tokenization.
    EXPECT_EQ(count(off, id), 0u) << "parse_special off: " << escaped(s) << " -> " << ids_str(off);
    EXPECT_EQ(count(off_ctx, id), 0u) << escaped(ctx) << " -> " << ids_str(off_ctx);
    // Control ranges: matched inside one, plain text outside all.
    const auto in_range = tok.encode_with_control_ranges(s, false, {{0, s.size()}});
    const auto no_range = tok.encode_with_control_ranges(s, false, {});
    EXPECT_EQ(in_range, alone) << escaped(s) << " inside a control range";
    EXPECT_EQ(no_range, off) << escaped(s) << " outside every control range";
    if (count(off, id) || count(off_ctx, id) || in_range != alone || no_range != off) return false;
  } else {
    EXPECT_EQ(off, alone) << "user-defined, parse_special off: " << escaped(s) << " -> "
                          << ids_str(off);
    if (off != alone) return false;
    if (!preempted(v, id, ctx, 1, false)) {
      EXPECT_EQ(count(off_ctx, id), 1u) << escaped(ctx) << " -> " << ids_str(off_ctx);
      if (count(off_ctx, id) != 1) return false;
    }
  }

  // Strip attributes: the whitespace on that side goes, whatever it is.
  const uint32_t attr = v.attr(id);
  if (attr & (kAttrRStrip | kAttrLStrip)) ++n.stripped;
  if (attr & kAttrRStrip) {
    const auto spaced = tok.encode(s + " \t\n x", false, true);
    const auto tight = tok.encode(s + "x", false, true);
    EXPECT_EQ(spaced, tight) << "RSTRIP " << escaped(s);
    if (spaced != tight) return false;
  }
  if (attr & kAttrLStrip) {
    const auto spaced = tok.encode("x \t\n " + s, false, true);
    const auto tight = tok.encode("x" + s, false, true);
    EXPECT_EQ(spaced, tight) << "LSTRIP " << escaped(s);
    if (spaced != tight) return false;
  }
  return true;
}

TEST(SpecialTokensOfEveryVocab, ParsedOnlyAsTheRuleSays) {
  const auto index = test::read_vocab_index();
  if (index.empty()) GTEST_SKIP() << "SKIP: no " << test::shared_path("tokenizers/index.json");
  for (const auto& e : index) {
    SCOPED_TRACE(e.name);
    const Tokenizer& tok = test::load_tokenizer(test::shared_path("tokenizers/" + e.gguf));
    const Vocab& v = tok.vocab();
    // The set under test is exactly the tokens the vocabulary types CONTROL / USER_DEFINED /
    // UNKNOWN, plus those llama.cpp's fix-ups make CONTROL (end-of-generation texts).
    size_t typed = 0;
    for (size_t i = 0; i < v.n_tokens(); ++i) {
      const auto id = static_cast<TokenId>(i);
      const TokenType t = v.token_type(id);
      if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) {
        ++typed;
        EXPECT_TRUE(v.attr(id) & (kAttrControl | kAttrUserDefined | kAttrUnknown))
            << "typed " << static_cast<int>(t) << " but not special: " << escaped(v.text(id));
      }
    }
    ASSERT_GE(v.special_tokens().size(), typed);
    ASSERT_GT(typed, 0u) << "every shared vocabulary has special tokens";

    Counts n;
    size_t failed = 0;
    for (const TokenId id : v.special_tokens()) {
      if (v.text(id).empty()) continue;
      if (!check_token(tok, id, n) && ++failed >= 5) break;  // enough to see the pattern
    }
    EXPECT_EQ(failed, 0u);
    std::printf("[ specials ] %-13s %zu control/unknown, %zu user-defined, %zu with strip\n",
                e.name.c_str(), n.control, n.user_defined, n.stripped);
  }
}

}  // namespace
}  // namespace hearth
