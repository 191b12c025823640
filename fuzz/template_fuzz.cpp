// libFuzzer target for the chat-template engine: input = template source, optionally followed
// by a NUL byte and a JSON render context. Parsing and rendering must end in a result or a
// TemplateError (hearth::Error) — never a crash, another exception type, or a hang (the
// render limits below bound time and memory).
#include <cstddef>
#include <cstdint>
#include <string>

#include "chat/chat_formatter.h"
#include "chat/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using json = nlohmann::ordered_json;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string source = input.substr(0, nul);
  json ctx = nullptr;
  if (nul != std::string::npos) ctx = json::parse(input.substr(nul + 1), nullptr, false);
  if (!ctx.is_object()) {
    ctx = json::parse(R"({"messages": [{"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Hi <|im_end|> {{ x }}"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "call00001",
        "type": "function", "function": {"name": "f", "arguments": {"a": [1, 2.5, null]}}}]},
      {"role": "tool", "tool_call_id": "call00001", "content": "ok"}],
      "tools": null, "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>"})");
  }
  hearth::chat::RenderOptions opt;
  opt.limits.max_output_bytes = 1 << 16;
  opt.limits.max_loop_iterations = 20000;
  opt.limits.max_call_depth = 16;
  opt.limits.max_work = 2000000;
  opt.clock = hearth::chat::fixed_clock(2025, 3, 7, 9, 5, 3);
  try {
    const auto t = hearth::chat::Template::parse(source);
    const auto r = t.render(ctx, opt);
    for (const auto& [a, b] : r.special_ok)
      if (a >= b || b > r.text.size()) __builtin_trap();  // ranges must lie inside the text
    // The formatter path (normalisation + render) with the context's messages.
    hearth::chat::ChatFormatter f(source, "<s>", "</s>");
    f.format(ctx.value("messages", json::array()), ctx.value("tools", json(nullptr)), true,
             ctx.value("kwargs", json(nullptr)), opt);
  } catch (const hearth::Error&) {
  }
  return 0;
}
