// libFuzzer target for the tool-call parsers (chat/tool_calls.h): input = one byte choosing the
// format, one byte seeding the split points, then a model's reply. Every parser must take any
// bytes without crashing or throwing, and give the same content, reasoning and calls whether
// the reply comes whole or in pieces of any size (the stream-split guarantee); every call's
// arguments must be a JSON object's text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat/tool_calls.h"

using namespace hearth::chat;

namespace {

const nlohmann::json kTools = nlohmann::json::parse(R"([
  {"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"n": {"type": "integer"}, "s": {"type": "string"}}}}}])");

ToolDelta run(ToolFormat format, std::string_view text, uint8_t seed) {
  auto parser = make_tool_call_parser(format, kTools);
  ToolDelta all;
  size_t at = 0;
  uint32_t state = seed;
  while (at < text.size()) {
    state = state * 1103515245u + 12345u;
    const size_t n = seed == 0 ? text.size() : 1 + (state >> 16) % 7;
    all.append(parser->push(text.substr(at, n)));
    at += n;
  }
  all.append(parser->finish());
  return all;
}

bool same(const ToolDelta& a, const ToolDelta& b) {
  if (a.content != b.content || a.reasoning != b.reasoning || a.calls.size() != b.calls.size())
    return false;
  for (size_t i = 0; i < a.calls.size(); ++i)
    if (a.calls[i].name != b.calls[i].name || a.calls[i].arguments != b.calls[i].arguments ||
        a.calls[i].id != b.calls[i].id)
      return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const auto format = static_cast<ToolFormat>(data[0] % 9);
  const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
  const ToolDelta whole = run(format, text, 0);
  const ToolDelta split = run(format, text, static_cast<uint8_t>(data[1] | 1));
  if (!same(whole, split)) std::abort();  // a stream split changed what the reply says
  for (const ToolCall& c : whole.calls) {
    const auto args = nlohmann::json::parse(c.arguments, nullptr, false);
    if (args.is_discarded() || !args.is_object()) std::abort();
    if (c.name.empty()) std::abort();
  }
  return 0;
}
