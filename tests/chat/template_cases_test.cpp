// Every conversation case of ../shared/templates rendered with every template must match the
// recorded Python Jinja2 output byte for byte (or fail where the reference failed; for
// raise_exception with the exact message).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <filesystem>

#include "chat/template.h"
#include "common/shared_data.h"

namespace hearth::chat {
namespace {

using json = nlohmann::ordered_json;

// The context transformers passes to render(), as the data's README specifies.
json case_context(const json& c, const json& special_tokens) {
  json ctx = json::object();
  ctx["messages"] = c.at("messages");
  ctx["tools"] = c.contains("tools") ? c["tools"] : json(nullptr);
  ctx["documents"] = c.contains("documents") ? c["documents"] : json(nullptr);
  ctx["add_generation_prompt"] = c.at("add_generation_prompt");
  for (const auto& [k, v] : special_tokens.items()) ctx[k] = v;
  if (c.contains("kwargs"))
    for (const auto& [k, v] : c["kwargs"].items()) ctx[k] = v;
  return ctx;
}

TEST(TemplateCases, AllSharedCasesMatchPythonJinja) {
  HEARTH_SHARED_OR_SKIP(dir, "templates/templates.json");
  const std::string root = std::filesystem::path(dir).parent_path().string();
  const json templates = json::parse(test::read_file(root + "/templates.json"));
  const json cases = json::parse(test::read_file(root + "/cases.json"));
  RenderOptions opt;
  opt.clock = fixed_clock(2025, 3, 7, 9, 5, 3);
  int checked = 0, errors_expected = 0;
  for (const auto& t : templates.at("templates")) {
    const std::string name = t.at("name");
    const Template tmpl =
        Template::parse(test::read_file(root + "/" + t.at("file").get<std::string>()));
    for (const auto& c : cases.at("cases")) {
      const std::string cname = c.at("name");
      SCOPED_TRACE(name + " / " + cname);
      const std::string base = root + "/expected/" + name + "/" + cname;
      const json ctx = case_context(c, t.at("special_tokens"));
      if (std::filesystem::exists(base + ".error")) {
        const std::string err = test::read_file(base + ".error");
        const std::string kind = err.substr(0, err.find('\n'));
        const std::string message = err.substr(err.find('\n') + 1);
        try {
          tmpl.render(ctx, opt);
          ADD_FAILURE() << "rendered, but the reference failed with " << kind << ": " << message;
        } catch (const TemplateError& e) {
          if (kind == "raise_exception") {
            EXPECT_EQ(e.kind(), TemplateError::Kind::Raised) << e.what();
            EXPECT_EQ(e.message(), message);
          }
        }
        ++errors_expected;
      } else {
        const std::string expected = test::read_file(base + ".txt");
        try {
          EXPECT_EQ(tmpl.render(ctx, opt).text, expected);
        } catch (const TemplateError& e) {
          ADD_FAILURE() << "unexpected error: " << e.what();
        }
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 11 * 17);
  EXPECT_GT(errors_expected, 0);
}

}  // namespace
}  // namespace hearth::chat
