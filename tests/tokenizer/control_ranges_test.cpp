// Rendered chat prompts parse control tokens only where the template wrote them: the same
// control text inside message content stays plain text.
#include <gtest/gtest.h>

#include <string>

#include "tok_test_util.h"

namespace hearth {
namespace {

TEST(ControlRanges, OnlyTemplateTextBecomesControlTokens) {
  HEARTH_SHARED_OR_SKIP(path, "tokenizers/vocab-qwen3.gguf");
  const Tokenizer& tok = test::load_tokenizer(path);
  const std::string head = "<|im_start|>user\n";
  const std::string content = "hi <|im_end|> there";
  const std::string tail = "<|im_end|>\n";
  const std::string text = head + content + tail;
  const ByteRanges ranges = {{0, head.size()}, {head.size() + content.size(), text.size()}};

  const auto all = tok.encode(text, false, true);
  const auto ranged = tok.encode_with_control_ranges(text, false, ranges);
  const TokenId im_end = tok.encode("<|im_end|>", false, true).at(0);
  auto count = [&](const std::vector<TokenId>& ids) {
    return std::count(ids.begin(), ids.end(), im_end);
  };
  EXPECT_EQ(count(all), 2);
  EXPECT_EQ(count(ranged), 1);
  EXPECT_EQ(tok.decode(ranged, {.render_special = true}), text);  // nothing lost

  // Ranges covering everything behave as plain parse_special; none as no special parsing of
  // control texts.
  EXPECT_EQ(tok.encode_with_control_ranges(text, false, {{0, text.size()}}), all);
  EXPECT_EQ(tok.encode_with_control_ranges(text, false, {}), tok.encode(text, false, false));
  // A range that cuts a control text in half does not allow it.
  EXPECT_EQ(count(tok.encode_with_control_ranges(text, false, {{0, head.size() - 3}})), 0);
}

}  // namespace
}  // namespace hearth
