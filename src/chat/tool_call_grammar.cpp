#include "chat/tool_call_grammar.h"

#include <fmt/format.h>

#include <functional>
#include <vector>

#include "sampling/json_schema_grammar.h"
#include "util/error.h"

namespace hearth::chat {
namespace {

using nlohmann::json;

struct Function {
  std::string name;
  json parameters;
};

// How a format writes a list of calls: open, the calls with sep between them, close. `call`
// writes one call from the function's name and the elements of its schemas (the arguments, or
// Qwen3-Coder's parameter values).
struct CallShape {
  std::string open, sep, close;
  bool parallel = true;  // the format has more than one call per reply
  std::function<std::string(const Function&, const std::vector<std::string>&)> call;
};

std::string lit(std::string_view s) {
  return gbnf_literal(s);
}

std::string json_str(const std::string& s) {
  return json(s).dump();
}

// Around the arguments object: text before and after it.
CallShape wrapped(std::string open, std::string sep, std::string close, bool parallel,
                  std::function<std::string(const std::string&)> before, std::string after) {
  return {std::move(open), std::move(sep), std::move(close), parallel,
          [before = std::move(before), after = std::move(after)](
              const Function& f, const std::vector<std::string>& e) {
            std::string out = lit(before(f.name));
            out.append(" ").append(e[0]);
            if (!after.empty()) out.append(" ").append(lit(after));
            return out;
          }};
}

std::string id_chars(int n) {
  return fmt::format("[a-zA-Z0-9]{{{}}}", n);
}

// Qwen3-Coder: one <parameter=…> per required property; strings written raw, the rest as JSON.
CallShape qwen3_coder_shape() {
  return {"", "\n", "", true, [](const Function& f, const std::vector<std::string>& e) {
            std::string out = lit("<tool_call>\n<function=" + f.name + ">\n");
            size_t i = 0;
            const json& props = f.parameters.value("properties", json::object());
            for (const json& r : f.parameters.value("required", json::array())) {
              const std::string p = r.get<std::string>();
              const json& ps = props.value(p, json::object());
              const bool text = ps.is_object() && ps.value("type", json()) == "string";
              out.append(" ").append(lit("<parameter=" + p + ">\n")).append(" ");
              out.append(text ? std::string("[^<]*") : e[i]);
              out.append(" ").append(lit("\n</parameter>\n"));
              ++i;
            }
            return out.append(" ").append(lit("</function>\n</tool_call>"));
          }};
}

CallShape shape_of(ToolFormat format) {
  const std::string ds_call =
      "<\xEF\xBD\x9Ctool\xE2\x96\x81"
      "call\xE2\x96\x81";
  const std::string ds_calls =
      "<\xEF\xBD\x9Ctool\xE2\x96\x81"
      "calls\xE2\x96\x81";
  const std::string ds_end = "\xEF\xBD\x9C>";
  switch (format) {
    case ToolFormat::Qwen3Coder:
      return qwen3_coder_shape();
    case ToolFormat::Llama3:
      return wrapped(
          "", "; ", "", false,
          [](auto& n) { return "{\"name\": " + json_str(n) + ", \"parameters\": "; }, "}");
    case ToolFormat::Mistral: {
      CallShape s{"[TOOL_CALLS][", ", ", "]", true, nullptr};
      s.call = [](const Function& f, const std::vector<std::string>& e) {
        return lit("{\"name\": " + json_str(f.name) + ", \"arguments\": ") + " " + e[0] + " " +
               lit(", \"id\": \"") + " " + id_chars(9) + " " + lit("\"}");
      };
      return s;
    }
    case ToolFormat::DeepSeek:
      return wrapped(
          ds_calls + "begin" + ds_end, "", ds_calls + "end" + ds_end, true,
          [=](auto& n) {
            return ds_call + "begin" + ds_end + "function" + "<\xEF\xBD\x9Ctool\xE2\x96\x81sep" +
                   ds_end + n + "\n```json\n";
          },
          "\n```" + ds_call + "end" + ds_end);
    case ToolFormat::CommandR: {
      CallShape s{"<|START_ACTION|>[\n    ", ",\n    ", "\n]<|END_ACTION|>", true, nullptr};
      s.call = [](const Function& f, const std::vector<std::string>& e) {
        return lit("{\"tool_call_id\": \"") + " [0-9] " +
               lit("\", \"tool_name\": " + json_str(f.name) + ", \"parameters\": ") + " " + e[0] +
               " " + lit("}");
      };
      return s;
    }
    case ToolFormat::Functionary:
      return wrapped(
          "", "", "", true, [](auto& n) { return "<function=" + n + ">"; }, "</function>");
    case ToolFormat::Harmony:
      return wrapped(
          "", "", "", false,
          [](auto& n) {
            return "<|channel|>commentary to=functions." + n + " <|constrain|>json<|message|>";
          },
          "");
    case ToolFormat::None:
    case ToolFormat::Hermes:
      break;
  }
  return wrapped(
      "", "\n", "", true,
      [](auto& n) { return "<tool_call>\n{\"name\": " + json_str(n) + ", \"arguments\": "; },
      "}\n</tool_call>");
}

std::vector<Function> functions_of(const json& tools, const std::optional<std::string>& only) {
  std::vector<Function> out;
  for (const json& t : tools) {
    const json& f = t.at("function");
    Function fn{f.at("name").get<std::string>(), f.value("parameters", json::object())};
    if (!fn.parameters.is_object() || fn.parameters.empty())
      fn.parameters = json{{"type", "object"}};
    if (!only || *only == fn.name) out.push_back(std::move(fn));
  }
  if (out.empty()) throw Error("tool_call_gbnf: no function to call");
  return out;
}

// The schemas a function's call needs: its parameters, or (Qwen3-Coder) each required
// property's schema.
std::vector<json> schemas_of(ToolFormat format, const Function& f) {
  if (format != ToolFormat::Qwen3Coder) return {f.parameters};
  std::vector<json> out;
  const json props = f.parameters.value("properties", json::object());
  const json required = f.parameters.value("required", json::array());
  if (!required.is_array()) return out;
  for (const json& r : required) {
    if (!r.is_string())
      throw Error(fmt::format("tool '{}': required names must be strings", f.name));
    json s = props.is_object() ? props.value(r.get<std::string>(), json::object()) : json::object();
    out.push_back(s.is_object() ? s : json::object());
  }
  return out;
}

}  // namespace

std::optional<std::string> tool_call_trigger(ToolFormat format) {
  switch (format) {
    case ToolFormat::None:
    case ToolFormat::Llama3:
      return std::nullopt;
    case ToolFormat::Hermes:
    case ToolFormat::Qwen3Coder:
      return "<tool_call>";
    case ToolFormat::Mistral:
      return "[TOOL_CALLS]";
    case ToolFormat::DeepSeek:
      return "<\xEF\xBD\x9Ctool\xE2\x96\x81"
             "calls\xE2\x96\x81"
             "begin\xEF\xBD\x9C>";
    case ToolFormat::CommandR:
      return "<|START_ACTION|>";
    case ToolFormat::Functionary:
      return "<function=";
    case ToolFormat::Harmony:
      return "<|channel|>commentary to=functions.";
  }
  return std::nullopt;
}

std::string tool_call_gbnf(ToolFormat format, const json& tools,
                           const std::optional<std::string>& only, bool parallel) {
  const CallShape shape = shape_of(format);
  const std::vector<Function> fns = functions_of(tools, only);
  std::vector<json> schemas;
  std::vector<std::pair<size_t, size_t>> spans;  // each function's schemas in `schemas`
  for (const Function& f : fns) {
    std::vector<json> s = schemas_of(format, f);
    spans.emplace_back(schemas.size(), s.size());
    for (json& j : s) schemas.push_back(std::move(j));
  }
  auto root = [&](const std::vector<std::string>& elements) {
    std::string calls;
    for (size_t i = 0; i < fns.size(); ++i) {
      const std::vector<std::string> mine(elements.begin() + spans[i].first,
                                          elements.begin() + spans[i].first + spans[i].second);
      if (i) calls.append(" | ");
      calls.append("(").append(shape.call(fns[i], mine)).append(")");
    }
    std::string body;
    if (!shape.open.empty()) body.append(lit(shape.open)).append(" ");
    body.append("(").append(calls).append(")");
    if (parallel && shape.parallel) {
      body.append(" (");
      if (!shape.sep.empty()) body.append(lit(shape.sep)).append(" ");
      body.append("(").append(calls).append("))*");
    }
    if (!shape.close.empty()) body.append(" ").append(lit(shape.close));
    return body;
  };
  try {
    // Arguments spaced as the templates' tojson writes them: the history repeats the reply.
    return json_schemas_to_gbnf(schemas, root, /*template_style=*/true);
  } catch (const Error& e) {
    throw Error(fmt::format("a tool's parameters schema: {}", e.what()));
  }
}

}  // namespace hearth::chat
