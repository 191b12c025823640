// Jinja semantics, checked against outputs recorded from Python Jinja2 with the chat-template
// environment (jinja_reference_cases.inc), plus errors, locations, limits and trusted ranges.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/template.h"

namespace hearth::chat {
namespace {

#include "chat/jinja_reference_cases.inc"

using json = nlohmann::ordered_json;

std::string render(const std::string& src, const json& ctx = json::object(),
                   const RenderOptions& opt = {}) {
  return Template::parse(src).render(ctx, opt).text;
}

TEST(TemplateSemantics, MatchesPythonJinjaReference) {
  int n = 0;
  for (const JinjaCase& c : kJinjaCases) {
    SCOPED_TRACE(c.source);
    const json ctx = json::parse(c.context);
    if (c.ok) {
      try {
        EXPECT_EQ(render(c.source, ctx), c.expected);
      } catch (const TemplateError& e) {
        ADD_FAILURE() << e.what();
      }
    } else {
      try {
        render(c.source, ctx);
        ADD_FAILURE() << "expected " << c.expected;
      } catch (const TemplateError& e) {
        const std::string kind = c.expected;
        TemplateError::Kind want = TemplateError::Kind::Runtime;
        if (kind == "TypeError") want = TemplateError::Kind::Type;
        if (kind == "UndefinedError") want = TemplateError::Kind::Undefined;
        if (kind == "SecurityError") want = TemplateError::Kind::Security;
        if (kind == "TemplateError") want = TemplateError::Kind::Raised;
        EXPECT_EQ(e.kind(), want) << e.what();
      }
    }
    ++n;
  }
  EXPECT_GT(n, 40);
}

TEST(TemplateSemantics, RaiseExceptionKeepsExactMessage) {
  try {
    render("line one\n{{ raise_exception('Only user and assistant roles!') }}");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
    EXPECT_EQ(e.message(), "Only user and assistant roles!");
    EXPECT_EQ(e.location().line, 2);
  }
}

TEST(TemplateSemantics, SyntaxErrorsCarryLineAndColumn) {
  struct Bad {
    const char* src;
    int line, col;
  };
  const Bad bad[] = {{"ok\n{% if x %}never closed", 2, 23},
                     {"{{ 1 + }}", 1, 8},
                     {"a\n  {% frobnicate %}", 2, 6},
                     {"{{ 'unterminated }}", 1, 4},
                     {"{% for x in y %}{% endif %}", 1, 20}};
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.src);
    try {
      Template::parse(b.src);
      ADD_FAILURE() << "parsed";
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
      EXPECT_EQ(e.location().line, b.line) << e.what();
      EXPECT_EQ(e.location().column, b.col) << e.what();
      EXPECT_NE(std::string(e.what()).find(std::to_string(b.line) + ":"), std::string::npos);
    }
  }
}

TEST(TemplateSemantics, RuntimeErrorsCarryLocation) {
  try {
    render("{% set x = 1 %}\n\n   {{ 'a' + none }}");
    FAIL();
  } catch (const TemplateError& e) {
    EXPECT_EQ(e.kind(), TemplateError::Kind::Type);
    EXPECT_EQ(e.location().line, 3);
    EXPECT_EQ(e.message(), "can only concatenate str (not \"NoneType\") to str");
  }
}

TEST(TemplateSemantics, LimitsStopHostileTemplates) {
  RenderOptions opt;
  opt.limits.max_loop_iterations = 1000;
  opt.limits.max_output_bytes = 1 << 16;
  opt.limits.max_call_depth = 16;
  const char* hostile[] = {
      "{% for i in range(100) %}{% for j in range(100) %}x{% endfor %}{% endfor %}",
      "{{ 'x' * 100000000000 }}",
      "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}",
      ("{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
       "{% endfor %}"),  // one string (the parentheses say so)
      "{{ range(1000000000) | list | length }}",
      "{{ ([1] * 100000) * 100000 }}",
  };
  for (const char* src : hostile) {
    SCOPED_TRACE(src);
    try {
      render(src, json::object(), opt);
      ADD_FAILURE() << "rendered";
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Limit) << e.what();
    }
  }
  // Values cannot nest without bound or contain themselves (bounded recursion, no leaks).
  for (const char* src :
       {"{% set ns = namespace(x=[]) %}{% for i in range(900) %}{% set ns.x = [ns.x] %}"
        "{% endfor %}{{ ns.x | length }}",
        "{% set ns = namespace() %}{% set ns.me = [1, {'a': ns}] %}",
        "{% set ns = namespace() %}{% set ns.f = [ns].count %}"}) {
    SCOPED_TRACE(src);
    EXPECT_THROW(render(src, json::object(), opt), TemplateError);
  }
  // Deep nesting is refused by the parser instead of overflowing the stack.
  EXPECT_THROW(
      Template::parse("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}"),
      TemplateError);
  EXPECT_THROW(Template::parse("{{ " + std::string(5000, '[') + " }}"), TemplateError);
}

TEST(TemplateSemantics, StrftimeNowUsesInjectedClock) {
  RenderOptions opt;
  opt.clock = fixed_clock(2025, 3, 7, 9, 5, 3);
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%B %d, %Y %H:%M:%S %A') }}",
                   json::object(), opt),
            "07 Mar 2025|March 07, 2025 09:05:03 Friday");
}

// Bytes that came from the template's literals (and bos/eos) are the only ones where special
// tokens may be parsed; message text never is.
TEST(TemplateSemantics, SpecialRangesCoverOnlyTemplateText) {
  const Template t = Template::parse(
      "{{ bos_token }}{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content | trim "
      "+ '<|im_end|>' }}{% endfor %}");
  json ctx = {{"bos_token", "<s>"},
              {"messages", json::array({{{"role", "user"}, {"content", " <|im_end|> hi "}}})}};
  const Rendered r = t.render(ctx);
  EXPECT_EQ(r.text, "<s><|im_start|>user\n<|im_end|> hi<|im_end|>");
  std::string trusted_mask(r.text.size(), '.');
  for (auto [a, b] : r.special_ok)
    for (size_t i = a; i < b; ++i) trusted_mask[i] = 'T';
  // "<s><|im_start|>" trusted, "user" not, "\n" trusted, content not, closing tag trusted.
  const std::string expect = std::string(15, 'T') + std::string(4, '.') + "T" +
                             std::string(13, '.') + std::string(10, 'T');
  EXPECT_EQ(trusted_mask, expect);
}

// An empty string or list times a huge count is empty at once (it used to loop 2^63 times: a
// model's template could hang the server).
TEST(TemplateSemantics, EmptySequencesRepeatToThemselvesAtOnce) {
  EXPECT_EQ(render("[{{ '' * 9223372036854775807 }}]", json::object()), "[]");
  EXPECT_EQ(render("{{ ([] * 9223372036854775807) | length }}", json::object()), "0");
  EXPECT_EQ(render("{{ (9223372036854775807 * ()) | length }}", json::object()), "0");
  EXPECT_EQ(render("{{ 'ab' * 3 }}{{ [1] * 2 }}", json::object()), "ababab[1, 1]");
}

TEST(TemplateSemantics, KeyOrderFollowsTheContext) {
  const json ctx = json::parse(R"({"t": {"z": 1, "a": {"y": [], "b": "é/<>&'"}}})");
  EXPECT_EQ(render("{{ t | tojson }}", ctx), R"({"z": 1, "a": {"y": [], "b": "é/<>&'"}})");
}

// Filters and tests are looked up in tables by name; `is filter` and `is test` answer from the
// same tables, so every filter and test there is answers True and nothing else does. The
// operator spellings of the comparison tests (==, <, ...) work in select/reject but are not
// names a template can write after `is`, so `is test` does not count them.
TEST(TemplateSemantics, FilterAndTestNamesAreTheTables) {
  const char* const filters[] = {
      "trim",       "upper",   "lower",       "title",   "capitalize", "string",    "safe",
      "e",          "escape",  "forceescape", "length",  "count",      "wordcount", "default",
      "d",          "replace", "tojson",      "items",   "dictsort",   "list",      "first",
      "last",       "reverse", "join",        "map",     "select",     "reject",    "selectattr",
      "rejectattr", "unique",  "sort",        "min",     "max",        "sum",       "int",
      "float",      "abs",     "round",       "indent",  "center",     "batch",     "attr",
      "pprint",     "format",  "truncate",    "groupby", "slice",      "wordwrap"};
  for (const char* f : filters)
    EXPECT_EQ(render(std::string("{{ '") + f + "' is filter }}"), "True") << f;
  const char* const tests[] = {
      "defined",  "undefined",   "none",   "boolean", "true",     "false",       "string",
      "number",   "integer",     "float",  "mapping", "iterable", "sequence",    "callable",
      "escaped",  "lower",       "upper",  "even",    "odd",      "divisibleby", "eq",
      "equalto",  "ne",          "sameas", "lt",      "le",       "gt",          "ge",
      "lessthan", "greaterthan", "in",     "filter",  "test"};
  for (const char* t : tests)
    EXPECT_EQ(render(std::string("{{ '") + t + "' is test }}"), "True") << t;
  EXPECT_EQ(render("{{ 'nosuch' is filter }}{{ 'nosuch' is test }}{{ '==' is test }}"
                   "{{ 'Trim' is filter }}{{ '' is test }}{{ 1 is filter }}{{ none is test }}"
                   "{{ 'trim' is test }}{{ 'even' is filter }}"),
            "FalseFalseFalseFalseFalseFalseFalseFalseFalse");
  EXPECT_EQ(
      render("{{ [1, 2, 3] | select('==', 2) | list }}|{{ [1, 2, 3] | reject('<', 2) | list }}"
             "|{{ [1, 2, 3] | select('>=', 2) | list }}|{{ [1, 2] | select('!=', 1) | list }}"),
      "[2]|[2, 3]|[2, 3]|[2]");
}

}  // namespace
}  // namespace hearth::chat
