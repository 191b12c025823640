// Tool calls in a model's reply: which output format a chat template's model uses for them, and
// an incremental parser per format that splits the streamed reply into plain content and
// completed calls. Pieces go in as they are generated, at any byte boundary; a call comes out
// once its closing text is seen (or at finish(), when the format has none), so a stream split
// anywhere gives the same calls. Text that may be the start of a call opener is held back until
// the next piece decides. A call that does not parse (bad JSON, no name) comes back as content,
// text and all: nothing is dropped.
//
// The formats, as their models write them (the parsers live in tool_format_<family>.cpp):
//   hermes       Hermes 2 Pro / Qwen2.5 / Qwen3: <tool_call>{"name":…,"arguments":{…}}</tool_call>
//   qwen3-coder  <tool_call><function=NAME><parameter=P>VALUE</parameter>…</function></tool_call>
//   llama3       Llama 3.x: a reply that is {"name":…,"parameters":{…}} (or "arguments"), or
//                <|python_tag|> followed by such objects (separated by ";")
//   mistral      [TOOL_CALLS][{"name":…,"arguments":{…},"id":…}, …] and the newer
//                [TOOL_CALLS]NAME[ARGS]{…} (repeated)
//   deepseek     DeepSeek V3 / R1:
//   <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>
//                NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>, and V3.1's
//                <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>
//   command-r    Command R7B: <|START_ACTION|>[{"tool_call_id":…,"tool_name":…,"parameters":{…}}]
//                <|END_ACTION|>
//   functionary  Functionary v3.2: >>>NAME\n{…} (">>>all\n" is content), and v3.1's
//                <function=NAME>{…}</function>
//   harmony      gpt-oss: <|channel|>analysis<|message|>…<|end|> is reasoning,
//                <|channel|>final<|message|>… content, and
//                <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
//                a call
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hearth::chat {

enum class ToolFormat {
  None,  // no parsing: the reply is all content
  Hermes,
  Qwen3Coder,
  Llama3,
  Mistral,
  DeepSeek,
  CommandR,
  Functionary,
  Harmony,
};

// "none", "hermes", "qwen3-coder", "llama3", "mistral", "deepseek", "command-r", "functionary",
// "harmony".
std::string_view tool_format_name(ToolFormat format);
// The format a name (as above) stands for; nullopt for an unknown name.
std::optional<ToolFormat> tool_format_from_name(std::string_view name);
// Every format's name, for help texts and errors.
std::string tool_format_names();
// The format a chat template's model writes calls in, from the template's text (the markers it
// renders tool calls with); None when it mentions none of them.
ToolFormat detect_tool_format(std::string_view template_source);

struct ToolCall {
  std::string name;
  std::string arguments;  // a JSON object, compact (nlohmann::json::dump)
  std::string id;         // when the format carries one (Mistral, Command R); else empty
};

struct ToolDelta {
  std::string content;
  std::string reasoning;        // only formats with their own reasoning channel (harmony)
  std::vector<ToolCall> calls;  // the calls completed by this piece, in order
  bool empty() const { return content.empty() && reasoning.empty() && calls.empty(); }
  void append(ToolDelta d);
};

class ToolCallParser {
 public:
  virtual ~ToolCallParser() = default;
  // A piece of the reply's text, as generated.
  virtual ToolDelta push(std::string_view text) = 0;
  // The end of the reply: what was held back (an undecided opener, an unclosed call: a call
  // whose text is complete is returned as a call, anything else as content).
  virtual ToolDelta finish() = 0;
};

// The parser for `format` (None: everything is content). `tools` is the request's "tools"
// array (or null): Qwen3-Coder's parameter values are typed by the functions' parameter schemas.
std::unique_ptr<ToolCallParser> make_tool_call_parser(ToolFormat format,
                                                      const nlohmann::json& tools = nullptr);

// Whether a format's markers are control tokens in its models' vocabularies, so the reply must
// be detokenized with them rendered as text (mistral's [TOOL_CALLS], harmony's <|channel|>, …).
bool tool_format_needs_special_tokens(ToolFormat format);

}  // namespace hearth::chat
