// libFuzzer target for the GBNF grammar engine: input = grammar text, optionally followed by a
// NUL byte and text to match. Parsing must end in a Grammar or a hearth::Error — never a
// crash, another exception type, or a hang. A grammar that parses then takes the text, in
// chunks, through a matcher (each step is bounded by the matcher's limits); the same text fed
// byte by byte must give the same answers; and at the first chunk boundaries the token mask
// over a small vocabulary cut from the input must equal the one-token-at-a-time reference.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/grammar_masker.h"
#include "sampling/grammar_matcher.h"
#include "sampling/token_trie.h"
#include "util/error.h"

using namespace hearth;

namespace {

std::vector<std::string> vocabulary(std::string_view text) {
  std::vector<std::string> pieces = {
      "",  "a",  "b", "ab",   " ",    "\"", "{",    "}",        "[", "]",        ",",    ":",   "0",
      "1", "\n", "é", "\xC3", "\xA9", "日", "\xE6", "\x97\xA5", "😀", "\xF0\x9F", "\xFF", "true"};
  for (size_t i = 0; i < text.size() && pieces.size() < 200; i += 3)
    pieces.emplace_back(text.substr(i, 1 + i % 5));
  return pieces;
}

void check_mask(GrammarMasker& masker, const GrammarMatcher& m,
                const std::vector<std::string>& pieces) {
  TokenMask mask;
  masker.fill(m, mask);
  for (size_t t = 0; t < pieces.size(); ++t) {
    const auto id = static_cast<int32_t>(t);
    bool want = false;
    if (t == 0) {
      want = m.can_end();  // token 0 is the end token
    } else {
      GrammarMatcher copy = m;
      want = copy.accept_bytes(pieces[t]);
    }
    if (mask.test(id) != want || masker.token_allowed(m, id) != want) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? "" : input.substr(nul + 1);
  GrammarLimits limits;  // smaller than the defaults, so that one input stays fast
  limits.max_elements = 1 << 16;
  limits.max_rules = 512;
  std::shared_ptr<const Grammar> g;
  try {
    g = std::make_shared<const Grammar>(Grammar::parse(source, limits));
  } catch (const Error&) {
    return 0;
  }
  (void)g->to_string();
  MatcherLimits ml;
  ml.max_stacks = 64;
  ml.max_depth = 256;
  ml.max_expansions = 4096;
  GrammarMatcher chunked(g, ml), bytewise(g, ml);
  const std::vector<std::string> pieces = vocabulary(text);
  GrammarMasker masker(std::make_shared<const TokenTrie>(pieces, std::vector<int32_t>{0}), 16);
  size_t pos = 0;
  for (int chunk = 0; pos < text.size() && !chunked.dead(); ++chunk) {
    if (chunk < 3) check_mask(masker, chunked, pieces);
    const size_t n = std::min(text.size() - pos, size_t{1} + (static_cast<uint8_t>(text[pos]) & 7));
    const bool ok = chunked.accept_bytes(text.substr(pos, n));
    bool ok_bytewise = true;
    for (size_t i = pos; i < pos + n && ok_bytewise; ++i)
      ok_bytewise = bytewise.accept_bytes(text.substr(i, 1));
    if (ok != ok_bytewise || chunked.can_end() != bytewise.can_end()) __builtin_trap();
    if (!ok && (!chunked.dead() || chunked.error().empty())) __builtin_trap();
    pos += n;
  }
  return 0;
}
