#include "tokenizer/text_prompt.h"

namespace hearth {

namespace {

// Lead tokens the vocabulary adds before a text prompt (BOS), with add_special.
std::vector<int32_t> lead_tokens(const Tokenizer& tok, const TextPrompt& p) {
  if (p.add_special && tok.vocab().add_bos() && tok.bos() >= 0) return {tok.bos()};
  return {};
}

// The prompt's text as ids (without lead tokens), special-token text parsed as it asks.
std::vector<int32_t> encode_text(const Tokenizer& tok, const TextPrompt& p) {
  if (!p.parse_special) return tok.encode(p.text, false, false);
  if (p.special_ranges.empty()) return tok.encode(p.text, false, true);
  return tok.encode_with_control_ranges(p.text, false, p.special_ranges);
}

// Per-token text of `tokens` as the concatenation of their pieces, when that reproduces `text`
// exactly.
bool piece_ends(const Tokenizer& tok, std::span<const int32_t> tokens, std::string_view text,
                std::vector<uint32_t>& ends) {
  size_t at = 0;
  for (int32_t id : tokens) {
    const std::string piece = tok.token_to_piece(id, true);
    if (text.substr(at, piece.size()) != piece) return false;
    at += piece.size();
    ends.push_back(static_cast<uint32_t>(at));
  }
  return at == text.size();
}

}  // namespace

std::vector<int32_t> tokenize_prompt(const Tokenizer& tok, const TextPrompt& prompt) {
  std::vector<int32_t> ids = lead_tokens(tok, prompt);
  const std::vector<int32_t> body = encode_text(tok, prompt);
  ids.insert(ids.end(), body.begin(), body.end());
  return ids;
}

PromptTokens tokenize_prompt_with_ends(const Tokenizer& tok, TextPrompt& prompt) {
  PromptTokens out;
  out.n_lead = lead_tokens(tok, prompt).size();
  if (!prompt.tokens.empty()) {
    out.ids = std::move(prompt.tokens);
    prompt.tokens.clear();
  } else {
    out.ids = tokenize_prompt(tok, prompt);
  }
  out.ends.assign(out.n_lead, 0);
  out.has_text = out.ids.size() >= out.n_lead &&
                 piece_ends(tok, std::span(out.ids).subspan(out.n_lead), prompt.text, out.ends);
  return out;
}

}  // namespace hearth
