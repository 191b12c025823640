// Internal to the tool-call parsers (tool_format_*.cpp): the pieces they share and one factory
// per format. The API is chat/tool_calls.h.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/text_scan.h"
#include "chat/tool_calls.h"

namespace hearth::chat::tools {

std::string_view trim(std::string_view s);

// `text` (surrounding whitespace allowed) as one JSON value; nullopt when it is not exactly one.
std::optional<nlohmann::json> parse_json(std::string_view text);
// Where the JSON object or array at the start of `text` (after whitespace) ends, by its
// brackets outside strings: the bytes it takes, whitespace before it included; 0 when the first
// non-space byte is not '{' or '[' (or there is none); npos while the value is not closed yet.
// Lets a streaming parser tell "wait for more" from "this is not JSON".
size_t json_value_extent(std::string_view text);
// The first JSON value at the start of `text` (after whitespace) and the bytes it took,
// whitespace included; nullopt when the text does not start with a whole JSON value.
std::optional<std::pair<nlohmann::json, size_t>> parse_json_prefix(std::string_view text);
// Arguments as a call carries them: an object, or a string holding one (some models encode
// them twice). The compact text; nullopt for anything else.
std::optional<std::string> arguments_text(const nlohmann::json& args);
// {name_key: "…", args_key: {…}} as a call (a missing args_key: no arguments, "{}"); nullopt
// when the name is missing or not a non-empty string, or the arguments are not an object.
std::optional<ToolCall> call_from_object(const nlohmann::json& obj, const char* name_key,
                                         const char* args_key);

// A parser that gathers the pieces in `pending_` and reads what it can after each (step), the
// rest at the end (`final`).
class BufferedParser : public ToolCallParser {
 public:
  ToolDelta push(std::string_view text) override;
  ToolDelta finish() override;

 protected:
  virtual void step(ToolDelta& out, bool final) = 0;
  std::string pending_;
};

// The common shape: content, then calls, each written between an opener and a closer (an empty
// closer: the call runs to the end of the reply). `parse` turns the text between them into
// calls (nullopt: malformed; the opener, the text and the closer become content). Whitespace
// between and after calls is dropped; other text after a call is content again.
class DelimitedCallParser : public BufferedParser {
 public:
  using BodyParser = std::function<std::optional<std::vector<ToolCall>>(std::string_view)>;
  DelimitedCallParser(std::string opener, std::string closer, BodyParser parse)
      : opener_(std::move(opener)), closer_(std::move(closer)), parse_(std::move(parse)) {}

 private:
  void step(ToolDelta& out, bool final) override;
  void close_call(ToolDelta& out, std::string_view body, bool closed);

  std::string opener_, closer_;
  BodyParser parse_;
  bool in_call_ = false;
  bool after_call_ = false;  // whitespace here is dropped
};

std::unique_ptr<ToolCallParser> make_hermes_parser();
std::unique_ptr<ToolCallParser> make_qwen3_coder_parser(const nlohmann::json& tools);
std::unique_ptr<ToolCallParser> make_llama3_parser();
std::unique_ptr<ToolCallParser> make_mistral_parser();
std::unique_ptr<ToolCallParser> make_deepseek_parser();
std::unique_ptr<ToolCallParser> make_command_r_parser();
std::unique_ptr<ToolCallParser> make_functionary_parser();
std::unique_ptr<ToolCallParser> make_harmony_parser();

}  // namespace hearth::chat::tools
