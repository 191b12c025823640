#include "server/next_turn.h"

#include <string_view>

#include "chat/prompt.h"
#include "util/error.h"

namespace hearth::server {

namespace {

using ojson = nlohmann::ordered_json;

// Stands for the next user message's content; the text before it is what that request
// starts with, whatever the user will write.
constexpr std::string_view kMarker = "hearth7next7turn7marker";

// Whether the client sends reasoning back: an earlier assistant message carries some.
bool sends_reasoning(const ojson& messages) {
  if (!messages.is_array()) return false;
  for (const ojson& m : messages) {
    if (!m.is_object() || m.value("role", "") != "assistant") continue;
    auto r = m.find("reasoning_content");
    if (r != m.end() && r->is_string() && !r->get_ref<const std::string&>().empty()) return true;
  }
  return false;
}

}  // namespace

std::optional<TextPrompt> next_turn_prompt(const ParsedRequest& pr, const ojson& reply,
                                           const chat::ChatFormatter& formatter,
                                           const Tokenizer& tok) {
  if (!pr.messages_json.is_array() || !reply.is_object()) return std::nullopt;
  chat::PromptInput in;
  in.messages = pr.messages_json;
  ojson said = reply;
  if (!sends_reasoning(pr.messages_json)) said.erase("reasoning_content");
  in.messages.push_back(std::move(said));
  in.messages.push_back({{"role", "user"}, {"content", kMarker}});
  in.tools = pr.tools;
  in.kwargs = pr.chat_template_kwargs;
  in.add_generation_prompt = false;
  chat::ChatPrompt p;
  try {
    p = chat::PromptBuilder(formatter, tok).render(in);
  } catch (const Error&) {
    return std::nullopt;  // a template that refuses this history: nothing to warm
  }
  TextPrompt t = std::move(p.text);
  const size_t cut = t.text.find(kMarker);
  if (cut == std::string::npos || cut == 0) return std::nullopt;
  t.text.resize(cut);
  t.tokens.clear();
  std::erase_if(t.special_ranges, [&](const auto& r) { return r.first >= cut; });
  for (auto& r : t.special_ranges) r.second = std::min(r.second, cut);
  return t;
}

}  // namespace hearth::server
