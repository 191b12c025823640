#include "server/output_format.h"

#include <fmt/format.h>

#include <string>

#include "sampling/json_schema_grammar.h"
#include "server/api_error.h"
#include "server/json_fields.h"
#include "util/error.h"

namespace hearth::server {

using nlohmann::json;

namespace {

struct GrammarSource {
  std::string gbnf;
  std::string param;  // the field it came from, for errors
};

[[noreturn]] void invalid(const std::string& param, const std::string& what) {
  throw ApiError(400, fmt::format("{}: {}", param, what), "invalid_request_error", param,
                 "invalid_value");
}

std::string schema_gbnf(const json& schema, const std::string& param) {
  try {
    return json_schema_to_gbnf(schema);
  } catch (const Error& e) {
    invalid(param, fmt::format("unsupported or invalid JSON Schema: {}", e.what()));
  }
}

// response_format: text (no grammar), json_object (any object; llama-server also takes a
// "schema" here), or json_schema with its name, description, schema and strict.
std::optional<GrammarSource> from_response_format(const json& body) {
  const json* v = field(body, "response_format");
  if (!v) return std::nullopt;
  if (!v->is_object()) wrong_type("response_format", "an object", *v);
  const json& t = required(*v, "type", "response_format.type");
  if (!t.is_string()) wrong_type("response_format.type", "a string", t);
  const std::string type = t.get<std::string>();
  if (type == "text") return std::nullopt;
  if (type == "json_object") {
    if (const json* s = field(*v, "schema")) {
      if (!s->is_object()) wrong_type("response_format.schema", "an object", *s);
      return GrammarSource{schema_gbnf(*s, "response_format.schema"), "response_format.schema"};
    }
    return GrammarSource{json_object_gbnf(), "response_format"};
  }
  if (type != "json_schema")
    bad_param("response_format.type",
              fmt::format("unknown response_format type '{}' (text, json_object, json_schema)",
                          type.substr(0, 80)));
  const json& s = required_object(*v, "json_schema", "response_format.json_schema");
  required_name(s, "response_format.json_schema.name");
  get_string(s, "description", "response_format.json_schema.description");
  get_bool(s, "strict", "response_format.json_schema.strict");
  const std::string param = "response_format.json_schema.schema";
  return GrammarSource{schema_gbnf(required_object(s, "schema", param.c_str()), param), param};
}

}  // namespace

std::shared_ptr<const Grammar> parse_output_format(const json& body, std::string* param) {
  std::vector<GrammarSource> sources;
  if (auto s = from_response_format(body)) sources.push_back(std::move(*s));
  if (const json* v = field(body, "json_schema")) {
    if (!v->is_object()) wrong_type("json_schema", "an object", *v);
    sources.push_back({schema_gbnf(*v, "json_schema"), "json_schema"});
  }
  if (auto g = get_string(body, "grammar"); g && !g->empty())
    sources.push_back({std::move(*g), "grammar"});
  if (sources.empty()) return nullptr;
  if (sources.size() > 1)
    bad_param(sources[1].param, fmt::format("'{}' and '{}' both constrain the reply; send only one",
                                            sources[0].param, sources[1].param));
  if (param) *param = sources[0].param;
  try {
    return std::make_shared<const Grammar>(Grammar::parse(sources[0].gbnf));
  } catch (const Error& e) {
    invalid(sources[0].param, e.what());
  }
}

}  // namespace hearth::server
