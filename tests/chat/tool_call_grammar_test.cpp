// The forcing grammar of each format accepts the calls its models write (and its chat templates
// render back), and the format's parser reads what the grammar accepts: grammar and parser
// agree on every format.
#include "chat/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <memory>

#include "chat/tool_call_testing.h"
#include "sampling/grammar.h"
#include "sampling/grammar_matcher.h"
#include "util/error.h"

namespace hearth::chat {
namespace {

using nlohmann::json;

const json kTools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "additionalProperties": false, "required": ["city", "days"],
    "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}}}},
  {"type": "function", "function": {"name": "ping"}}
])");

bool accepts(const std::string& gbnf, const std::string& text) {
  GrammarMatcher m(std::make_shared<const Grammar>(Grammar::parse(gbnf)));
  return m.accept_bytes(text) && m.can_end();
}

struct Case {
  ToolFormat format;
  std::string reply;  // one get_weather call as the format writes it
};

const std::string kDs = "\xEF\xBD\x9C";  // ｜
const std::string kU = "\xE2\x96\x81";   // ▁

std::vector<Case> cases() {
  return {
      {ToolFormat::Hermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 3}}"
       "\n</tool_call>"},
      {ToolFormat::Qwen3Coder,
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
       "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>"},
      {ToolFormat::Llama3,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"days\": 3}}"},
      {ToolFormat::Mistral,
       "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": "
       "{\"city\": \"Paris\", \"days\": 3}, \"id\": \"a1B2c3D4e\"}]"},
      {ToolFormat::DeepSeek, "<" + kDs + "tool" + kU + "calls" + kU + "begin" + kDs + "><" + kDs +
                                 "tool" + kU + "call" + kU + "begin" + kDs + ">function<" + kDs +
                                 "tool" + kU + "sep" + kDs +
                                 ">get_weather\n```json\n"
                                 "{\"city\": \"Paris\", \"days\": 3}\n```<" +
                                 kDs + "tool" + kU + "call" + kU + "end" + kDs + "><" + kDs +
                                 "tool" + kU + "calls" + kU + "end" + kDs + ">"},
      {ToolFormat::CommandR,
       "<|START_ACTION|>[\n    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", "
       "\"parameters\": {\"city\": \"Paris\", \"days\": 3}}\n]<|END_ACTION|>"},
      {ToolFormat::Functionary,
       "<function=get_weather>{\"city\": \"Paris\", \"days\": 3}</function>"},
      {ToolFormat::Harmony,
       "<|channel|>commentary to=functions.get_weather <|constrain|>json"
       "<|message|>{\"city\": \"Paris\", \"days\": 3}"},
  };
}

TEST(ToolCallGrammar, EachFormatsGrammarAcceptsWhatItsParserReads) {
  for (const Case& c : cases()) {
    const std::string name(tool_format_name(c.format));
    const std::string gbnf = tool_call_gbnf(c.format, kTools, std::nullopt, false);
    EXPECT_TRUE(accepts(gbnf, c.reply)) << name << "\n" << gbnf;
    const ToolDelta d = testing::parse_whole(c.format, c.reply, kTools);
    ASSERT_EQ(d.calls.size(), 1u) << name << ": " << d.content;
    EXPECT_EQ(d.calls[0].name, "get_weather") << name;
    EXPECT_EQ(json::parse(d.calls[0].arguments), json::parse(R"({"city":"Paris","days":3})"))
        << name;
    EXPECT_EQ(d.content, "") << name;
  }
}

TEST(ToolCallGrammar, ArgumentsFollowTheSchema) {
  const std::string gbnf = tool_call_gbnf(ToolFormat::Hermes, kTools, std::nullopt, false);
  const std::string head = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": ";
  EXPECT_FALSE(accepts(gbnf, head + "{\"city\": \"Paris\"}}\n</tool_call>"));  // days required
  EXPECT_FALSE(accepts(gbnf, head + "{\"city\": \"Paris\", \"days\": 0}}\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, "Sure! " + head + "{\"city\": \"P\", \"days\": 1}}\n</tool_call>"));
  // Spaced and escaped as the templates' tojson writes JSON, and nothing else.
  EXPECT_TRUE(accepts(gbnf, head + "{\"city\": \"P\\n\u00e9\", \"days\": 1}}\n</tool_call>"))
      << "raw non-ASCII, canonical escapes";
  EXPECT_FALSE(accepts(gbnf, head + "{\"city\": \"P\\u00e9\", \"days\": 1}}\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, head + "{\"city\":\"P\",\"days\":1}}\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, head + "{ \"city\": \"P\", \"days\": 1}}\n</tool_call>"));
  EXPECT_FALSE(accepts(gbnf, head + "{\"city\": \"\\/\", \"days\": 1}}\n</tool_call>"));
  // A function without parameters takes any object.
  EXPECT_TRUE(accepts(gbnf,
                      "<tool_call>\n{\"name\": \"ping\", \"arguments\": {\"x\": [1]}}\n"
                      "</tool_call>"));
}

TEST(ToolCallGrammar, NamedFunctionAndParallelCalls) {
  const std::string one = tool_call_gbnf(ToolFormat::Hermes, kTools, std::string("ping"), false);
  const std::string ping = "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(accepts(one, ping));
  EXPECT_FALSE(accepts(one,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                       "{\"city\": \"P\", \"days\": 1}}\n</tool_call>"));
  EXPECT_FALSE(accepts(one, ping + "\n" + ping));
  const std::string many = tool_call_gbnf(ToolFormat::Hermes, kTools, std::string("ping"), true);
  EXPECT_TRUE(accepts(many, ping + "\n" + ping + "\n" + ping));
  const std::string mistral = tool_call_gbnf(ToolFormat::Mistral, kTools, std::nullopt, true);
  EXPECT_TRUE(accepts(mistral,
                      "[TOOL_CALLS][{\"name\": \"ping\", \"arguments\": {}, \"id\": "
                      "\"abcdefghi\"}, {\"name\": \"ping\", \"arguments\": {}, "
                      "\"id\": \"123456789\"}]"));
}

TEST(ToolCallGrammar, RefusedSchemaNamesTheProblem) {
  const json bad = json::parse(R"([{"type": "function", "function": {"name": "f",
      "parameters": {"type": "object", "properties": {"x": {"$ref": "#/nowhere"}}}}}])");
  try {
    tool_call_gbnf(ToolFormat::Hermes, bad, std::nullopt, true);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/properties/x"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace hearth::chat
