#include "chat/prompt.h"

#include <map>

#include "util/error.h"

namespace hearth::chat {

using json = nlohmann::ordered_json;

bool wants_lead_tokens(const Tokenizer& tok, std::string_view text) {
  // Templates that write bos_token themselves must not get a second one.
  const std::string bos = tok.bos() >= 0 ? tok.token_to_piece(tok.bos(), true) : "";
  return bos.empty() || !text.starts_with(bos);
}

ChatPrompt PromptBuilder::render(const PromptInput& in) const {
  ChatPrompt p;
  p.rendered = formatter_.format(in.messages, in.tools, in.add_generation_prompt, in.kwargs);
  p.text.text = p.rendered.text;
  p.text.special_ranges = p.rendered.special_ok;
  p.text.parse_special = true;
  p.text.add_special = wants_lead_tokens(tok_, p.text.text);
  return p;
}

ChatPrompt PromptBuilder::render_dropping(const PromptInput& in, const std::vector<size_t>& victims,
                                          size_t n_drop) const {
  PromptInput fewer = in;
  fewer.messages = json::array();
  size_t next = 0;
  for (size_t i = 0; i < in.messages.size(); ++i) {
    if (next < n_drop && victims[next] == i) {
      ++next;
      continue;
    }
    fewer.messages.push_back(in.messages[i]);
  }
  ChatPrompt p = render(fewer);
  p.dropped_messages = static_cast<int64_t>(n_drop);
  p.text.tokens = tokenize_prompt(tok_, p.text);
  return p;
}

namespace {

bool is_system(const json& m) {
  if (!m.is_object()) return false;
  auto r = m.find("role");
  return r != m.end() && r->is_string() && (*r == "system" || *r == "developer");
}

int64_t n_tokens(const ChatPrompt& p) {
  return static_cast<int64_t>(p.text.tokens.size());
}

// How many victims to drop, guessed from the full prompt's tokens per byte of message JSON.
size_t guess_drops(const json& messages, const std::vector<size_t>& victims, int64_t full_tokens,
                   int64_t max_tokens) {
  std::vector<double> size(messages.size());
  double total = 0;
  for (size_t i = 0; i < messages.size(); ++i) total += size[i] = double(messages[i].dump().size());
  const double per_byte = total > 0 ? double(full_tokens) / total : 0;
  double left = double(full_tokens);
  size_t n = 0;
  while (n < victims.size() && left > double(max_tokens)) left -= size[victims[n++]] * per_byte;
  return std::max<size_t>(n, 1);
}

}  // namespace

ChatPrompt PromptBuilder::render_within(const PromptInput& in, int64_t max_tokens) const {
  // The victims, oldest first: every message but the system ones and the last.
  std::vector<size_t> victims;
  for (size_t i = 0; i + 1 < in.messages.size(); ++i)
    if (!is_system(in.messages[i])) victims.push_back(i);
  ChatPrompt full = render_dropping(in, victims, 0);
  if (n_tokens(full) <= max_tokens || victims.empty()) return full;
  // The answer is the fewest drops that fit (all of them when none does). From a guess, walk
  // down while one drop fewer still fits, or up until it fits: each count is tokenized once.
  std::map<size_t, ChatPrompt> seen;
  auto at = [&](size_t n) -> ChatPrompt& {
    auto it = seen.find(n);
    if (it == seen.end()) it = seen.emplace(n, render_dropping(in, victims, n)).first;
    return it->second;
  };
  auto fits = [&](size_t n) { return n_tokens(at(n)) <= max_tokens; };
  size_t n =
      std::min(guess_drops(in.messages, victims, n_tokens(full), max_tokens), victims.size());
  try {
    if (fits(n)) {
      while (n > 1 && fits(n - 1)) --n;
    } else {
      while (n < victims.size() && !fits(n)) ++n;
    }
  } catch (const Error&) {
    // A template that refuses some shorter conversation: ask in order, as one drop at a time
    // would, so the same refusal (or none) comes out.
    seen.clear();
    n = 1;
    while (n < victims.size() && !fits(n)) ++n;
  }
  return std::move(at(n));
}

}  // namespace hearth::chat
