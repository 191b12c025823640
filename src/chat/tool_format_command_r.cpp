// PLACEHOLDER (being written): plain content until the parser lands.
#include "chat/tool_parsers.h"

namespace hearth::chat::tools {

std::unique_ptr<ToolCallParser> make_command_r_parser() {
  return make_tool_call_parser(ToolFormat::None);
}

}  // namespace hearth::chat::tools
