#include "chat/chat_formatter.h"

#include "util/error.h"
#include "util/json_depth.h"
#include "util/log.h"

namespace hearth::chat {

using json = nlohmann::ordered_json;

const char* ChatFormatter::chatml_template() {
  return "{%- for message in messages -%}\n"
         "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}\n"
         "{%- endfor -%}\n"
         "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}\n";
}

namespace {

std::string content_text(const json& content, const std::string& where) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    fail("{}.content: expected a string, an array of text parts or null", where);
  std::string text;
  for (size_t j = 0; j < content.size(); ++j) {
    const json& part = content[j];
    const std::string pw = fmt::format("{}.content[{}]", where, j);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      fail("{}: expected an object with a \"type\"", pw);
    const std::string type = part["type"].get<std::string>();
    if (type != "text") fail("{}: content part type '{}' is not supported (text only)", pw, type);
    if (!part.contains("text") || !part["text"].is_string()) fail("{}.text: expected a string", pw);
    if (!text.empty()) text += '\n';
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

namespace {

json normalize_message(const json& m, const std::string& where) {
  json n = json::object();
  for (const auto& [k, v] : m.items()) {
    if (k == "role") {
      const std::string role = v.get<std::string>();
      n["role"] = role == "developer" ? "system" : role;
    } else if (k == "content") {
      n["content"] = content_text(v, where);
    } else if (k == "reasoning_content") {
      if (!v.is_null() && !v.is_string()) fail("{}.reasoning_content: expected a string", where);
      n[k] = v;
    } else if (k == "tool_calls") {
      if (v.is_null()) continue;
      if (!v.is_array()) fail("{}.tool_calls: expected an array", where);
      json calls = v;
      for (size_t j = 0; j < calls.size(); ++j) {
        json& c = calls[j];
        if (!c.is_object()) fail("{}.tool_calls[{}]: expected an object", where, j);
        if (c.contains("function") && c["function"].is_object()) {
          json& args = c["function"]["arguments"];
          // OpenAI sends arguments as a JSON string; templates expect an object.
          if (args.is_string() && json_depth_ok(args.get_ref<const std::string&>())) {
            json parsed = json::parse(args.get<std::string>(), nullptr, false);
            if (!parsed.is_discarded() && parsed.is_object()) args = std::move(parsed);
          }
        }
      }
      n["tool_calls"] = std::move(calls);
    } else {
      n[k] = v;
    }
  }
  if (!n.contains("content")) n["content"] = "";
  return n;
}

void check_message(const json& m, const std::string& where) {
  if (!m.is_object()) fail("{}: expected an object", where);
  if (!m.contains("role") || !m["role"].is_string()) fail("{}.role: expected a string", where);
}

// A message normalisation would leave as it is (the common case: role and string content).
bool already_normal(const json& m) {
  if (m.size() != 2) return false;
  auto role = m.find("role");
  auto content = m.find("content");
  return role != m.end() && content != m.end() && content->is_string() &&
         role->get_ref<const std::string&>() != "developer";
}

}  // namespace

json normalize_messages(const json& messages) {
  if (!messages.is_array()) fail("messages: expected an array");
  if (messages.empty()) fail("messages: the conversation is empty");
  json out = json::array();
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string where = fmt::format("messages[{}]", i);
    check_message(messages[i], where);
    out.push_back(normalize_message(messages[i], where));
  }
  return out;
}

ChatFormatter::ChatFormatter(std::optional<std::string> template_source, std::string bos_token,
                             std::string eos_token)
    : bos_(std::move(bos_token)), eos_(std::move(eos_token)) {
  if (!template_source || template_source->empty()) {
    fallback_ = true;
    warning_ =
        "the model has no chat template (tokenizer.chat_template); using ChatML "
        "(<|im_start|>role ... <|im_end|>), which may not match how the model was trained";
    log::warn("{}", warning_);
    template_ = Template::parse(chatml_template());
  } else {
    template_ = Template::parse(*template_source);
    markers_ = detect_reasoning_markers(*template_source);
  }
}

Rendered ChatFormatter::format(const json& messages, const json& tools, bool add_generation_prompt,
                               const json& kwargs, const RenderOptions& options) const {
  if (!messages.is_array()) fail("messages: expected an array");
  if (messages.empty()) fail("messages: the conversation is empty");
  if (!tools.is_null() && !tools.is_array()) fail("tools: expected an array or null");
  if (!kwargs.is_null() && !kwargs.is_object()) fail("chat_template_kwargs: expected an object");
  std::vector<Value> msgs;
  msgs.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const json& m = messages[i];
    if (m.is_object() && already_normal(m) && m["role"].is_string()) {
      msgs.push_back(Value::from_json(m));
    } else {
      const std::string where = fmt::format("messages[{}]", i);
      check_message(m, where);
      msgs.push_back(Value::from_json(normalize_message(m, where)));
    }
  }
  Variables vars;
  vars.reserve(8 + (kwargs.is_object() ? kwargs.size() : 0));
  auto set = [&vars](const std::string& k, Value v) {
    for (auto& kv : vars) {
      if (kv.first == k) {
        kv.second = std::move(v);
        return;
      }
    }
    vars.emplace_back(k, std::move(v));
  };
  set("messages", Value::list(std::move(msgs)));
  set("tools", tools.is_array() && !tools.empty() ? Value::from_json(tools) : Value::none());
  set("documents", Value::none());
  set("add_generation_prompt", Value::boolean(add_generation_prompt));
  if (!bos_.empty()) set("bos_token", Value::string(bos_));
  if (!eos_.empty()) set("eos_token", Value::string(eos_));
  if (kwargs.is_object())
    for (const auto& [k, v] : kwargs.items()) set(k, Value::from_json(v));
  return template_.render(std::move(vars), options);
}

ReasoningSplitter ChatFormatter::reasoning_splitter(const Rendered& prompt) const {
  if (!markers_) return ReasoningSplitter(ReasoningMarkers{"", ""});
  return ReasoningSplitter(*markers_, prompt_opens_reasoning(prompt.text, *markers_));
}

}  // namespace hearth::chat
