// Filters, dict keys and loops whose expected outputs were recorded from Python Jinja2 3.1 in the
// environment transformers' apply_chat_template uses (sandboxed, trim_blocks, lstrip_blocks,
// transformers' tojson). A case with a null `expected` must fail with a TemplateError.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <span>
#include <string>

#include "chat/template.h"

namespace hearth::chat {
namespace {

using json = nlohmann::ordered_json;

struct Case {
  const char* source;
  const char* context;
  const char* expected;  // null: Jinja2 raised
};

void check_cases(std::span<const Case> cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    try {
      const std::string out = Template::parse(c.source).render(json::parse(c.context)).text;
      if (c.expected) {
        EXPECT_EQ(out, c.expected);
      } else {
        ADD_FAILURE() << "rendered " << out << " where Jinja2 raised";
      }
    } catch (const TemplateError& e) {
      if (c.expected) ADD_FAILURE() << "unexpected error: " << e.what();
    }
  }
}

// select/reject/selectattr/rejectattr/map start with Jinja's `if value:`: a falsy input (None,
// undefined, 0, "") is an empty sequence and the arguments are not even checked.
TEST(JinjaBuiltins, SelectAndMapOverNothing) {
  const Case cases[] = {
      {R"J({{ none | selectattr('type', 'equalto', 'function') | list }}|{{ none | rejectattr('x') | list }}|{{ none | select | list }}|{{ none | reject('odd') | list }}|{{ none | map(attribute='name') | list }}|{{ none | map('upper') | list }})J",
       R"J({})J", R"J([]|[]|[]|[]|[]|[])J"},
      {R"J({{ missing | selectattr('x') | list }}|{{ missing | rejectattr('x') | list }}|{{ missing | select | list }}|{{ missing | reject | list }}|{{ missing | map('upper') | list }})J",
       R"J({})J", R"J([]|[]|[]|[]|[])J"},
      {R"J({{ none | select('no_such_test') | list }}|{{ none | map | list }}|{{ '' | map('upper') | list }}|{{ 0 | select | list }}|{{ [] | selectattr('a') | list }})J",
       R"J({})J", R"J([]|[]|[]|[]|[])J"},
      {R"J({% for t in tools | selectattr('type', 'equalto', 'function') %}{{ t.name }}{% else %}no tools{% endfor %})J",
       R"J({"tools": null})J", R"J(no tools)J"},
      {R"J({{ [0, 1, '', 'a', none] | select | list }}|{{ [1, 2, 3] | reject('odd') | list }}|{{ xs | map(attribute='n', default=0) | list }})J",
       R"J({"xs": [{"n": 1}, {}]})J", R"J([1, 'a']|[2]|[1, 0])J"},
      // A truthy input is still checked: unknown test, non-iterable, missing filter name.
      {R"J({{ [1] | select('no_such_test') | list }})J", R"J({})J", nullptr},
      {R"J({{ 5 | select | list }})J", R"J({})J", nullptr},
      {R"J({{ [1] | map | list }})J", R"J({})J", nullptr},
      // Only these filters have the guard: the rest iterate None and fail as in Python.
      {R"J({{ none | join }})J", R"J({})J", nullptr},
      {R"J({{ none | list }})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

}  // namespace
}  // namespace hearth::chat
