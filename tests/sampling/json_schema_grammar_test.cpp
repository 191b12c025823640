// JSON Schema → GBNF: the grammars' languages (checked with the test-only recognizer in
// gbnf_recognizer.h), a few exact outputs, and the errors for bad schemas.
//
// nlohmann::json keeps object keys sorted, so the converter's "schema order" of properties is
// alphabetical: the instances below list required members alphabetically, then optional ones.
#include "sampling/json_schema_grammar.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sampling/gbnf_recognizer.h"
#include "sampling/grammar.h"
#include "sampling/grammar_matcher.h"
#include "util/error.h"

namespace hearth {
namespace {

using nlohmann::json;

// The grammar for `schema`, parsed (undefined or duplicate rules, left recursion and syntax
// errors fail the test).
struct Checked {
  std::string text;
  std::optional<test::GbnfRecognizer> rec;
};

Checked grammar_for(const json& schema) {
  Checked c;
  c.text = json_schema_to_gbnf(schema);
  try {
    c.rec.emplace(c.text);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what() << "\n" << c.text;
  }
  return c;
}

void expect_language(const json& schema, const std::vector<std::string>& valid,
                     const std::vector<std::string>& invalid) {
  const Checked g = grammar_for(schema);
  ASSERT_TRUE(g.rec.has_value());
  for (const std::string& v : valid) {
    EXPECT_TRUE(json::accept(v)) << "not JSON (test bug): " << v;
    EXPECT_TRUE(g.rec->accepts(v))
        << "should accept: " << v << "\nschema: " << schema.dump() << "\n"
        << g.text;
  }
  for (const std::string& v : invalid)
    EXPECT_FALSE(g.rec->accepts(v))
        << "should reject: " << v << "\nschema: " << schema.dump() << "\n"
        << g.text;
}

// The conversion fails with a message that starts with `path` (the offending keyword's JSON
// pointer, or a prefix of it) and contains `what`.
void expect_error(const json& schema, const std::string& path, const std::string& what = "") {
  try {
    const std::string g = json_schema_to_gbnf(schema);
    ADD_FAILURE() << "no error for " << schema.dump() << "\n" << g;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind(path, 0), 0u) << msg;
    EXPECT_NE(msg.find(": "), std::string::npos) << msg;
    EXPECT_NE(msg.find(what), std::string::npos) << msg;
  }
}

// --- the recognizer itself -------------------------------------------------------------

TEST(JsonSchemaRecognizer, MatchesTheDialect) {
  const test::GbnfRecognizer r(R"(# a comment
root ::= "a" x{2,3} ( "-" | [0-9]+ )? tail   # trailing comment
x ::= [^a-c\x00] | "\x41\"" | "\\"
tail ::= "é" . | "z"*
)");
  EXPECT_TRUE(r.accepts("add"));
  EXPECT_FALSE(r.accepts("adddd"));
  EXPECT_TRUE(r.accepts("aA\"d-éx"));
  EXPECT_TRUE(r.accepts("a\\\\\\42zzz"));
  EXPECT_FALSE(r.accepts("abd"));
  EXPECT_FALSE(r.accepts("ad"));
  EXPECT_FALSE(r.accepts("adc"));
  EXPECT_EQ(r.rule_count(), 3u);
}

TEST(JsonSchemaRecognizer, RejectsBrokenGrammars) {
  EXPECT_THROW(test::GbnfRecognizer("root ::= missing\n"), std::runtime_error);
  EXPECT_THROW(test::GbnfRecognizer("root ::= \"a\"\nroot ::= \"b\"\n"), std::runtime_error);
  EXPECT_THROW(test::GbnfRecognizer("x ::= \"a\"\n"), std::runtime_error);
  const test::GbnfRecognizer left("root ::= root \"a\" | \"b\"\n");
  EXPECT_THROW((void)left.accepts("ba"), std::runtime_error);
}

// --- exact output ----------------------------------------------------------------------

TEST(JsonSchemaGolden, Primitives) {
  EXPECT_EQ(json_schema_to_gbnf(json::parse(R"({"type":"boolean"})")),
            "root ::= boolean\n"
            "boolean ::= \"true\" | \"false\"\n");
  EXPECT_EQ(json_schema_to_gbnf(json::parse(R"({"type":"string"})")),
            "root ::= string\n"
            "string ::= \"\\\"\" char* \"\\\"\"\n"
            "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n");
}

TEST(JsonSchemaGolden, EnumAndIntegerRange) {
  EXPECT_EQ(json_schema_to_gbnf(json::parse(R"({"enum":["a\"b",1,null,[true]]})")),
            R"(root ::= "\"a\\\"b\"" | "1" | "null" | "[true]")"
            "\n");
  EXPECT_EQ(json_schema_to_gbnf(json::parse(R"({"type":"integer","minimum":0})")),
            R"(root ::= "0" | [1-9] [0-9]*)"
            "\n");
  EXPECT_EQ(json_schema_to_gbnf(json::parse(R"({"type":"integer","minimum":-3,"maximum":42})")),
            R"(root ::= "-" [1-3] | [0-9] | [1-3] [0-9] | "4" [0-2])"
            "\n");
}

// Past 16 values an enum is written as a trie of its values' prefixes: the same language, and
// few alternatives alive at any character (a flat alternation of 10,000 values is 10,000 stacks
// at the opening quote, past the matcher's limits).
TEST(JsonSchemaGolden, LargeEnumsAreTriesOfTheSameValues) {
  json values = json::array();
  for (int i = 0; i < 10000; ++i) values.push_back(fmt::format("v{}", i * 37 % 10007));
  values.push_back("v1");   // a repeat
  values.push_back("v");    // a prefix of the others
  values.push_back("é-ü");  // multi-byte characters
  values.push_back("é-ö");
  values.push_back(5);
  const json schema = {{"enum", values}};
  std::vector<std::string> valid,
      invalid = {R"("v10007")", R"("w1")", R"("")", R"("é-")", "6", R"("v1 ")", R"("é")"};
  for (size_t i = 0; i < values.size(); i += 97) valid.push_back(values[i].dump());
  for (const char* v : {R"("v")", R"("é-ü")", R"("é-ö")", "5"}) valid.push_back(v);
  expect_language(schema, valid, invalid);
  const std::string text = json_schema_to_gbnf(schema);
  EXPECT_LT(text.size(), 200000u);
  EXPECT_EQ(text.find("\"\\\"v1\\\"\" | "), std::string::npos) << "not flat";
  // The matcher follows it within its limits, at every character of a value.
  auto g = std::make_shared<const Grammar>(Grammar::parse(text));
  for (const std::string& v :
       {values[777].dump(), values[9999].dump(), std::string(R"("é-ö")"), std::string(R"("v")")}) {
    GrammarMatcher m(g);
    EXPECT_TRUE(m.error().empty()) << m.error();
    EXPECT_TRUE(m.accept_bytes(v)) << v << ": " << m.error();
    EXPECT_TRUE(m.can_end()) << v;
  }
}

TEST(JsonSchemaGolden, ObjectWithRequiredAndOptional) {
  const json schema = json::parse(R"({"type":"object","properties":{
      "id":{"type":"integer"},"tag":{"type":"string"}},
      "required":["id"],"additionalProperties":false})");
  EXPECT_EQ(json_schema_to_gbnf(schema),
            "root ::= \"{\" ws \"\\\"id\\\"\" ws \":\" ws integer "
            "( ws \",\" ws \"\\\"tag\\\"\" ws \":\" ws string )? ws \"}\"\n"
            "integer ::= \"-\"? int-part\n"
            "int-part ::= \"0\" | [1-9] [0-9]*\n"
            "string ::= \"\\\"\" char* \"\\\"\"\n"
            "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )\n"
            "ws ::= ( \" \" | \"\\n\" [ \\t]{0,20} )?\n");
}

TEST(JsonSchemaGolden, JsonObjectMode) {
  const std::string g = json_object_gbnf();
  EXPECT_EQ(g.substr(0, g.find('\n')), "root ::= object");
  const test::GbnfRecognizer r(g);
  EXPECT_TRUE(r.accepts("{}"));
  EXPECT_TRUE(r.accepts(R"({"a": 1, "b": [true, null, {"c": "\u00e9"}], "d": -0.5e3})"));
  EXPECT_TRUE(r.accepts("{\n  \"a\": {\n    \"b\": []\n  }\n}"));
  EXPECT_FALSE(r.accepts("[]"));
  EXPECT_FALSE(r.accepts(R"("x")"));
  EXPECT_FALSE(r.accepts(R"({"a":})"));
  EXPECT_FALSE(r.accepts(R"({"a":1,})"));
  EXPECT_FALSE(r.accepts(R"({a:1})"));
}

// --- languages -------------------------------------------------------------------------

TEST(JsonSchemaObjects, RequiredOptionalAndNoExtras) {
  const json schema = json::parse(R"({"type":"object","properties":{
      "name":{"type":"string"},
      "age":{"type":"integer","minimum":0,"maximum":150},
      "email":{"type":"string","format":"email"}},
    "required":["name","age"],"additionalProperties":false})");
  expect_language(schema,
                  {R"({"age":30,"name":"Al"})", R"({"age":0,"name":"","email":"a@b.c"})",
                   "{\n  \"age\": 150,\n  \"name\": \"Bo\\n\",\n  \"email\": \"x\"\n}",
                   R"({ "age" : 7 , "name" : "x" })"},
                  {R"({"age":30})",                           // name missing
                   R"({"name":"Al"})",                        // age missing
                   R"({"age":30,"name":"Al","x":1})",         // an extra member
                   R"({"age":151,"name":"Al"})",              // above maximum
                   R"({"age":-1,"name":"Al"})",               // below minimum
                   R"({"age":"30","name":"Al"})",             // wrong type
                   R"({"age":30,"name":5})",                  // wrong type
                   R"({"age":30,"name":"Al","age":31})",      // a duplicate key
                   R"({"age":30,"name":"Al","email":null})",  // wrong type
                   R"([{"age":30,"name":"Al"}])", "null", R"({"age":30,"name":"Al"} )"});
}

TEST(JsonSchemaObjects, MemberOrderIsFixed) {
  // A subset of the schema's instances: the members come in one order.
  const json schema = json::parse(
      R"({"properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]})");
  expect_language(schema, {R"({"a":1,"b":2})", R"({"a":1,"b":2,"c":3})"},
                  {R"({"b":2,"a":1})", R"({"c":3,"a":1,"b":2})"});
}

TEST(JsonSchemaObjects, ExtraMembersByDefault) {
  const json schema =
      json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})");
  expect_language(schema,
                  {R"({"a":1})", R"({"a":1,"b":"x"})", R"({"a":1,"b":[1,{}],"ab":null,"":0})",
                   R"({"a":1,"A":true,"a\n":2,"é":3})"},
                  {R"({"a":1,"a":2})", R"({"b":1})", R"({"a":"x"})", R"({"a":1,"b"})"});
}

TEST(JsonSchemaObjects, OnlyOptionalMembers) {
  const json schema = json::parse(
      R"({"properties":{"x":{"type":"string"},"y":{"type":"boolean"}}})");  // type inferred
  expect_language(
      schema,
      {"{}", "{ }", R"({"x":"a"})", R"({"y":true})", R"({"x":"a","y":false})", R"({"z":1})",
       R"({"x":"a","z":1})", R"({"y":true,"z":null,"w":[]})"},
      {R"({"x":1})", R"({"x":"a","x":"b"})", R"({"y":1})", "[]", R"({,})", R"({"x":"a",})"});
}

TEST(JsonSchemaObjects, ManyOptionalMembersUseSharedTails) {
  json schema = {{"type", "object"}, {"additionalProperties", false}};
  for (char c = 'a'; c <= 'h'; ++c) schema["properties"][std::string(1, c)] = {{"type", "null"}};
  expect_language(schema,
                  {"{}", R"({"a":null})", R"({"h":null})", R"({"b":null,"g":null})",
                   R"({"a":null,"b":null,"c":null,"d":null,"e":null,"f":null,"g":null,"h":null})"},
                  {R"({"i":null})", R"({"a":null,"a":null})", R"({"a":1})"});
}

TEST(JsonSchemaObjects, AdditionalPropertiesSchema) {
  expect_language(json::parse(R"({"type":"object","additionalProperties":{"type":"integer"}})"),
                  {"{}", R"({"a":1,"b":-2})"}, {R"({"a":"x"})", R"({"a":1,"b":null})"});
  expect_language(json::parse(R"({"properties":{"n":{"type":"string"}},"required":["n"],
                      "additionalProperties":{"enum":[true]}})"),
                  {R"({"n":"x"})", R"({"n":"x","m":true})"},
                  {R"({"n":"x","m":false})", R"({"n":"x","n":true})"});
  expect_language(json::parse(R"({"type":"object","additionalProperties":false})"), {"{}", "{ }"},
                  {R"({"a":1})"});
}

TEST(JsonSchemaObjects, FalsePropertyAndRequiredWithoutSchema) {
  expect_language(json::parse(R"({"type":"object","properties":{"secret":false}})"),
                  {"{}", R"({"x":1})", R"({"secrets":1})", R"({"secre":1})"},
                  {R"({"secret":1})", R"({"x":1,"secret":1})"});
  expect_language(json::parse(R"({"type":"object","required":["id"]})"),
                  {R"({"id":5})", R"({"id":"x","x":1})"},
                  {"{}", R"({"x":1})", R"({"id":1,"id":2})"});
}

TEST(JsonSchemaObjects, KeysNeedingEscapes) {
  // Listed keys with escapes and non-ASCII: extra keys must still differ from them.
  const json schema = json::parse(
      R"({"properties":{"a\"b":{"type":"integer"},"é/~":{"type":"null"}},"required":["a\"b"]})");
  expect_language(
      schema,
      {R"({"a\"b":1})", R"({"a\"b":1,"é/~":null})", R"({"a\"b":1,"a\"c":2})",
       R"({"a\"b":1,"a":2,"a\"":3,"a\"bc":4,"é/":5,"é/~~":6})"},
      {R"({"a\"b":1,"a\"b":2})", R"({"a\"b":1,"é/~":null,"é/~":null})", R"({"a\"b":1,"é/~":1})"});
}

TEST(JsonSchemaArrays, ItemsWithCounts) {
  expect_language(
      json::parse(R"({"type":"array","items":{"type":"integer"},"minItems":2,"maxItems":3})"),
      {"[1,2]", "[1, 2, 3]", "[\n  1,\n  -2\n]"},
      {"[]", "[1]", "[1,2,3,4]", R"([1,"a"])", "[1,2,]", "[1 2]", "{}"});
  expect_language(json::parse(R"({"type":"array","maxItems":0})"), {"[]", "[ ]"}, {"[1]"});
  expect_language(json::parse(R"({"items":{"type":"string"}})"), {"[]", R"(["a","b","c"])"},
                  {"[1]", R"(["a",null])"});
}

TEST(JsonSchemaArrays, Tuples) {
  expect_language(
      json::parse(R"({"type":"array","prefixItems":[{"type":"string"},{"type":"integer"}],
                      "items":false})"),
      {"[]", R"(["a"])", R"(["a",1])"}, {"[1]", R"(["a",1,2])", R"(["a","b"])"});
  expect_language(json::parse(R"({"prefixItems":[{"const":"x"}],"items":{"type":"boolean"},
                      "minItems":2,"maxItems":3})"),
                  {R"(["x",true])", R"(["x",true,false])"},
                  {R"(["x"])", R"(["x",true,true,true])", "[true,true]", R"(["x",1])"});
  // Draft 4: items as an array, additionalItems for the rest.
  expect_language(json::parse(R"({"items":[{"type":"null"}],"additionalItems":{"type":"string"}})"),
                  {"[]", "[null]", R"([null,"a","b"])"}, {R"(["a"])", "[null,null]"});
  json long_tuple = {{"type", "array"}, {"items", false}, {"minItems", 9}};
  for (int i = 0; i < 10; ++i) long_tuple["prefixItems"].push_back({{"const", i}});
  expect_language(long_tuple, {"[0,1,2,3,4,5,6,7,8]", "[0,1,2,3,4,5,6,7,8,9]"},
                  {"[0,1,2,3,4,5,6,7]", "[0,1,2,3,4,5,6,7,8,9,10]", "[1,1,2,3,4,5,6,7,8]"});
}

TEST(JsonSchemaStrings, CharactersAndEscapes) {
  expect_language(json::parse(R"({"type":"string"})"),
                  {R"("")", R"("plain")", R"("\" \\ \/ \b \f \n \r \t \u00e9 \uD83D\uDE00")",
                   "\"é€😀\"", "\"\x7f\""},
                  {"\"a\x01\"", "\"a\nb\"", R"("\x41")", R"("\u12")", R"("abc)", "abc", "'a'"});
  expect_language(json::parse(R"({"type":"string","minLength":2,"maxLength":3})"),
                  {R"("ab")", R"("abc")", R"("\u00e9\u00e9")", R"("é\n")"},
                  {R"("a")", R"("abcd")", R"("")", R"("\n")"});
  expect_language(json::parse(R"({"type":"string","maxLength":0})"), {R"("")"}, {R"("a")"});
}

TEST(JsonSchemaStrings, Patterns) {
  expect_language(json::parse(R"({"type":"string","pattern":"^[A-Z]{2}-\\d{3}$"})"),
                  {R"("AB-123")", R"("ZZ-000")"},
                  {R"("AB-12")", R"("ab-123")", R"("AB-1234")", R"("AB123")", R"("")"});
  expect_language(json::parse(R"({"pattern":"^(foo|bar)+baz?$"})"),
                  {R"("fooba")", R"("foobaz")", R"("barfooba")", R"("foobarbaz")"},
                  {R"("foo")", R"("foobar")", R"("baz")", R"("")", R"("fo")", R"("foobazz")"});
  // A quote and a backslash in the pattern are escaped characters in the JSON string.
  expect_language(json::parse(R"({"pattern":"^a\"b\\\\c$"})"), {R"("a\"b\\c")"},
                  {R"("a"b\c")", R"("a\"bc")"});
  expect_language(json::parse(R"({"pattern":"^.{3}$"})"),
                  {R"("abc")", R"("a\"c")", "\"é€😀\"", R"("a\tc")"},
                  {R"("ab")", R"("a\nc")", R"("abcd")"});
  expect_language(json::parse(R"({"pattern":"^[^a-c]+$"})"), {R"("xyz")", R"("\"")", R"("\\")"},
                  {R"("abc")", R"("xa")"});
  expect_language(json::parse(R"({"pattern":"^a\\sb(?:c|)[\\w.-]*x{2,}$"})"),
                  {R"("a bxx")", R"("a\tbc_.-9xxx")"}, {R"("abxx")", R"("a bx")", R"("a b!xx")"});
  // Non-ASCII ranges, and \s with a raw no-break space or an escaped newline. Characters are
  // written raw or with their canonical escape only: "\u00a0" is left out (a subset).
  expect_language(json::parse(R"({"pattern":"^[α-ω]+\\s?😀$"})"),
                  {R"("αβ 😀")", R"("ω\n😀")", "\"ω\u00a0😀\"", R"("ω😀")"},
                  {R"("a😀")", R"("ω  😀")", R"("ω\u00a0😀")"});
  // An unanchored pattern is still matched as a whole (a subset of its instances).
  expect_language(json::parse(R"({"pattern":"ab"})"), {R"("ab")"}, {R"("xab")"});
}

TEST(JsonSchemaStrings, Formats) {
  expect_language(json::parse(R"({"type":"string","format":"date"})"),
                  {R"("2024-02-29")", R"("1999-12-31")"},
                  {R"("2024-13-01")", R"("24-01-01")", R"("2024-01-32")", R"("x")"});
  expect_language(json::parse(R"({"type":"string","format":"time"})"),
                  {R"("12:34:56Z")", R"("23:59:59.123+02:00")"}, {R"("24:00:00Z")", R"("12:34Z")"});
  expect_language(json::parse(R"({"type":"string","format":"date-time"})"),
                  {R"("2024-01-02T03:04:05Z")", R"("2024-01-02T03:04:05.5-07:30")"},
                  {R"("2024-01-02 03:04:05Z")", R"("2024-01-02")"});
  expect_language(json::parse(R"({"type":"string","format":"uuid"})"),
                  {R"("123e4567-e89b-12d3-a456-426614174000")"},
                  {R"("123e4567-e89b-12d3-a456")", R"("123e4567e89b12d3a456426614174000")"});
  expect_language(json::parse(R"({"type":"string","format":"email"})"), {R"("anything")"}, {"1"});
}

TEST(JsonSchemaIntegers, RangesAreExact) {
  struct Range {
    std::optional<long long> lo, hi;
  };
  std::vector<Range> ranges = {
      {0, {}},       {{}, 0},     {-5, 5},   {7, 7},    {-123, -45}, {10, 99},    {9, 100},
      {1, 1000},     {-1000, -1}, {{}, -20}, {37, {}},  {-37, {}},   {123, 4567}, {995, 1005},
      {-1005, -995}, {0, 0},      {-1, -1},  {100, {}}, {{}, {}},
  };
  std::mt19937 rng(1234);
  for (int i = 0; i < 40; ++i) {  // random bounds of mixed signs and digit counts
    std::uniform_int_distribution<long long> d(-20000, 20000);
    long long a = d(rng) / (1 + i % 7 * 10), b = d(rng);
    if (a > b) std::swap(a, b);
    ranges.push_back({a, b});
  }
  for (const Range& r : ranges) {
    json schema = {{"type", "integer"}};
    if (r.lo) schema["minimum"] = *r.lo;
    if (r.hi) schema["maximum"] = *r.hi;
    const Checked g = grammar_for(schema);
    ASSERT_TRUE(g.rec.has_value());
    std::vector<long long> probes;
    for (long long n = -1100; n <= 1100; ++n) probes.push_back(n);
    for (long long n = -21000; n <= 21000; n += 37) probes.push_back(n);
    for (std::optional<long long> b : {r.lo, r.hi})
      if (b)
        for (long long n = *b - 12; n <= *b + 12; ++n) probes.push_back(n);
    for (long long n : probes) {
      const bool in = (!r.lo || n >= *r.lo) && (!r.hi || n <= *r.hi);
      ASSERT_EQ(g.rec->accepts(std::to_string(n)), in) << n << " in " << schema.dump() << "\n"
                                                       << g.text;
    }
    for (const char* bad : {"01", "-01", "00", "1.0", "1e3", "+1", "", "-"})
      EXPECT_FALSE(g.rec->accepts(bad)) << bad << " in " << schema.dump();
    // JSON's -0 is the integer 0: admitted without bounds, left out (a subset) with them.
    EXPECT_EQ(g.rec->accepts("-0"), !r.lo && !r.hi) << schema.dump();
  }
}

TEST(JsonSchemaIntegers, ExclusiveFractionalAndHugeBounds) {
  expect_language(json::parse(R"({"type":"integer","exclusiveMinimum":1.5,"exclusiveMaximum":10})"),
                  {"2", "9"}, {"1", "10"});
  expect_language(json::parse(R"({"type":"integer","minimum":5,"exclusiveMinimum":true})"), {"6"},
                  {"5"});
  expect_language(json::parse(R"({"type":"integer","minimum":2.5,"maximum":7.9})"), {"3", "7"},
                  {"2", "8"});
  expect_language(json::parse(R"({"type":"integer","maximum":-0.5e1})"), {"-5", "-60"},
                  {"-4", "0"});
}

TEST(JsonSchemaIntegers, HugeBounds) {
  expect_language(json::parse(R"({"type":"integer","minimum":9007199254740993})"),
                  {"9007199254740993", "9007199254740994", "10000000000000000000000"},
                  {"9007199254740992", "-9007199254740993", "0"});
  expect_language(json::parse(R"({"type":"integer","maximum":18446744073709551615,"minimum":0})"),
                  {"18446744073709551615", "0"}, {"18446744073709551616", "-1"});
  // 100-digit bounds: flat alternatives, not parentheses nested once per digit.
  const std::string e100 = "1" + std::string(100, '0');
  expect_language(json::parse(R"({"type":"integer","minimum":1e100,"maximum":3.5e101})"),
                  {e100, e100 + "1", "349" + std::string(99, '9'), "35" + std::string(100, '0')},
                  {std::string(100, '9'), "35" + std::string(99, '0') + "1", e100 + "00"});
  expect_language(json::parse(R"({"type":"integer","minimum":1e30})"),
                  {"1000000000000000000000000000000", "1000000000000000000000000000001"},
                  {"999999999999999999999999999999", "1"});
}

TEST(JsonSchemaNumbers, NumbersAndSign) {
  expect_language(json::parse(R"({"type":"number"})"),
                  {"0", "-1.5e10", "1E+2", "3.25", "-0", "0.0e-0"},
                  {"01", ".5", "1.", "+1", "1e", "--1", "NaN"});
  expect_language(json::parse(R"({"type":"number","minimum":0})"), {"0", "0.5", "12e3"},
                  {"-0.5", "-3"});
}

TEST(JsonSchemaValues, EnumConstAndAnyValue) {
  expect_language(json::parse(R"({"enum":["red","green",1,null,{"a":[1,2]}]})"),
                  {R"("red")", R"("green")", "1", "null", R"({"a":[1,2]})"},
                  {R"("blue")", "2", R"({"a": [1,2]})", R"("Red")", "1.0"});
  expect_language(json::parse(R"({"type":"string","enum":["a",1]})"), {R"("a")"}, {"1"});
  expect_language(json::parse(R"({"const":{"k":"v"}})"), {R"({"k":"v"})"}, {R"({"k":"w"})"});
  for (const json& any : {json::object(), json(true)})
    expect_language(any, {"1", R"("x")", R"([1,{"a":null}])", "true", "null"},
                    {"", "tru", "[1,]", "{\"a\"}"});
  expect_language(json::parse(R"({"type":"null"})"), {"null"}, {"false", "0"});
}

TEST(JsonSchemaValues, AnyOfOneOfAndTypeLists) {
  expect_language(json::parse(R"({"type":["string","null"]})"), {R"("a")", "null"}, {"1", "[]"});
  const json alts =
      json::parse(R"([{"type":"integer","minimum":10},{"type":"string","maxLength":1}])");
  for (const char* key : {"anyOf", "oneOf"})
    expect_language(json{{key, alts}}, {"10", "11", R"("a")"}, {"9", R"("ab")", "null"});
  // Keywords beside anyOf apply to every alternative.
  expect_language(
      json::parse(R"({"type":"object","properties":{"kind":{"type":"string"}},"required":["kind"],
        "anyOf":[{"properties":{"a":{"type":"integer"}},"required":["a"]},
                 {"properties":{"b":{"type":"boolean"}},"required":["b"]}]})"),
      {R"({"a":1,"kind":"x"})", R"({"b":true,"kind":"y"})"},
      {R"({"kind":"x"})", R"({"a":true,"kind":"x"})", R"({"a":1})"});
}

TEST(JsonSchemaValues, AllOfMerges) {
  expect_language(
      json::parse(
          R"({"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},
                               {"properties":{"b":{"type":"integer"}},"required":["b"]}]})"),
      {R"({"a":"x","b":1})", R"({"a":"x","b":1,"c":0})"}, {R"({"a":"x"})", R"({"b":1})"});
  expect_language(json::parse(R"({"allOf":[{"type":"string"},{"minLength":2},{"maxLength":3}]})"),
                  {R"("ab")", R"("abc")"}, {R"("a")", R"("abcd")", "12"});
  expect_language(
      json::parse(R"({"allOf":[{"type":"integer","minimum":0},{"maximum":10},{"minimum":-5}]})"),
      {"0", "10"}, {"11", "-1"});
  // A part's additionalProperties false removes the other parts' optional properties.
  expect_language(
      json::parse(R"({"allOf":[{"properties":{"a":{"type":"integer"}},"additionalProperties":false},
                               {"properties":{"b":{"type":"integer"}}}]})"),
      {"{}", R"({"a":1})"}, {R"({"b":1})", R"({"a":1,"b":2})"});
  // $ref inside allOf, and $ref beside other keywords.
  expect_language(
      json::parse(R"({"$defs":{"base":{"properties":{"id":{"type":"integer"}},"required":["id"]}},
        "allOf":[{"$ref":"#/$defs/base"},
                 {"properties":{"name":{"type":"string"}},"required":["name"]}]})"),
      {R"({"id":1,"name":"x"})"}, {R"({"id":1})", R"({"name":"x"})"});
  expect_language(json::parse(R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":1,
                      "description":"beside $ref"})"),
                  {R"("a")"}, {R"("ab")", "1"});
}

TEST(JsonSchemaRefs, RecursiveDefinitions) {
  const json tree = json::parse(R"({"$defs":{"node":{"type":"object","properties":{
      "value":{"type":"integer"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},
      "required":["value"],"additionalProperties":false}},"$ref":"#/$defs/node"})");
  const Checked g = grammar_for(tree);
  EXPECT_NE(g.text.find("\nnode ::= "), std::string::npos) << g.text;
  expect_language(tree,
                  {R"({"value":1})", R"({"value":1,"children":[]})",
                   R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4}]}]})"},
                  {R"({"value":1,"children":[{}]})", R"({"value":1,"children":[{"value":"x"}]})",
                   R"({"children":[]})"});
  expect_language(
      json::parse(R"({"definitions":{"pos":{"type":"integer","minimum":1}},"type":"array",
                      "items":{"$ref":"#/definitions/pos"}})"),
      {"[1,2]", "[]"}, {"[0]"});
  expect_language(json::parse(R"({"type":"object","properties":{"next":{"$ref":"#"},
                      "v":{"type":"integer"}},"required":["v"],"additionalProperties":false})"),
                  {R"({"v":1})", R"({"v":1,"next":{"v":2,"next":{"v":3}}})"},
                  {R"({"v":1,"next":{}})", R"({"v":1,"next":null})"});
  // Recursion through an allOf part: the part is expanded in place, the reference inside its
  // items becomes the rule.
  expect_language(json::parse(R"({"$defs":{
        "base":{"type":"object",
                "properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/derived"}}}},
        "derived":{"allOf":[{"$ref":"#/$defs/base"},
                            {"properties":{"x":{"type":"integer"}},"required":["x"]}]}},
        "$ref":"#/$defs/derived"})"),
                  {R"({"x":1})", R"({"x":1,"kids":[{"x":2,"kids":[]}]})"},
                  {R"({"x":1,"kids":[{}]})", R"({"kids":[]})"});
  // Mutual recursion through arrays.
  expect_language(json::parse(R"({"$defs":{"a":{"type":"array","items":{"$ref":"#/$defs/b"}},
                      "b":{"anyOf":[{"type":"null"},{"$ref":"#/$defs/a"}]}},"$ref":"#/$defs/a"})"),
                  {"[]", "[null,[]]", "[[[null]],null]"}, {"null", "[1]"});
}

TEST(JsonSchemaGrammar, WhitespaceIsBounded) {
  const json schema = json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}},
                                      "required":["a"]})");
  expect_language(schema,
                  {"{\n  \"a\": 1\n}", "{\"a\":1}", "{ \"a\" : 1 }", "{\n\t\t\"a\":\n\t1}",
                   "{\n" + std::string(20, ' ') + "\"a\":1}"},
                  {"{   \"a\":1}", " {\"a\":1}", "{\"a\":1} ", "{\n\n\"a\":1}",
                   "{\n" + std::string(21, ' ') + "\"a\":1}", "{\r\n\"a\":1}"});
}

// --- errors ----------------------------------------------------------------------------

TEST(JsonSchemaErrors, KeywordTypes) {
  expect_error(json::parse(R"({"properties":{"age":{"type":"integer","minimum":"x"}}})"),
               "/properties/age/minimum", "must be a number");
  expect_error(json::parse(R"({"properties":{"a/b":{"type":"integer","maximum":[]}}})"),
               "/properties/a~1b/maximum");
  expect_error(json::parse(R"({"type":5})"), "/type");
  expect_error(json::parse(R"({"type":"foo"})"), "/type", "unknown type");
  expect_error(json::parse(R"({"type":[]})"), "/type");
  expect_error(json::parse(R"({"type":"string","minLength":-1})"), "/minLength");
  expect_error(json::parse(R"({"type":"array","maxItems":1.5})"), "/maxItems");
  expect_error(json::parse(R"({"required":"a"})"), "/required");
  expect_error(json::parse(R"({"type":"object","properties":[]})"), "/properties");
  expect_error(json::parse(R"({"type":"object","additionalProperties":5})"),
               "/additionalProperties");
  expect_error(json::parse(R"({"enum":[]})"), "/enum");
  expect_error(json::parse(R"({"anyOf":{}})"), "/anyOf");
  expect_error(json::parse(R"({"allOf":[]})"), "/allOf");
  expect_error(json::parse(R"({"type":"string","pattern":7})"), "/pattern");
  expect_error(json::parse(R"({"items":[1]})"), "/items/0");
  expect_error(json::parse("false"), "(root)", "false");
  expect_error(json::parse("3"), "(root)");
}

TEST(JsonSchemaErrors, Refs) {
  expect_error(json::parse(R"({"$ref":"#/$defs/missing"})"), "/$ref", "does not resolve");
  expect_error(json::parse(R"({"properties":{"a":{"$ref":"https://example.com/s.json"}}})"),
               "/properties/a/$ref", "not a local reference");
  expect_error(json::parse(R"({"$ref":5})"), "/$ref");
  expect_error(json::parse(R"({"$ref":"#"})"), "/$ref", "refers back to itself");
  expect_error(json::parse(R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"},{"type":"null"}]}},
                      "$ref":"#/$defs/a"})"),
               "/$defs/a/anyOf/0/$ref", "refers back to itself");
}

TEST(JsonSchemaErrors, Patterns) {
  expect_error(json{{"pattern", std::string(21, '(') + "a" + std::string(21, ')')}}, "/pattern",
               "nested deeper than 20");
  for (const char* bad : {"(?=x)", "a\\1", "a{", "\\bfoo", "[]", "a**", "(a", "a)", "\\p{L}", "a^b",
                          "a$b", "[z-a]", "\\q", "x{3,2}", "x{10001}"})
    expect_error(json{{"type", "string"}, {"pattern", bad}}, "/pattern", "pattern");
  expect_error(json::parse(R"({"properties":{"p":{"pattern":"(?<=a)b"}}})"),
               "/properties/p/pattern");
}

TEST(JsonSchemaErrors, EmptyRangesAndUnsatisfiable) {
  expect_error(json::parse(R"({"type":"array","minItems":3,"maxItems":2})"), "/minItems");
  expect_error(json::parse(R"({"type":"string","minLength":3,"maxLength":2})"), "/minLength");
  expect_error(json::parse(R"({"type":"integer","minimum":5,"maximum":4})"), "/minimum");
  expect_error(json::parse(R"({"type":"integer","exclusiveMinimum":4,"exclusiveMaximum":5})"),
               "/minimum");
  expect_error(json::parse(R"({"properties":{"x":false},"required":["x"]})"), "/properties/x",
               "required");
  expect_error(json::parse(R"({"type":"object","additionalProperties":false,"required":["x"]})"),
               "/required", "additionalProperties");
  expect_error(json::parse(R"({"prefixItems":[{}],"items":false,"minItems":2})"), "/minItems");
  expect_error(json::parse(R"({"allOf":[{"type":"string"},{"type":"integer"}]})"), "/allOf",
               "types");
  expect_error(json::parse(R"({"allOf":[{"pattern":"a"},{"pattern":"b"}]})"), "/allOf", "pattern");
  expect_error(json::parse(R"({"type":"string","enum":[1,2]})"), "/enum");
  expect_error(json::parse(R"({"type":"string","const":1})"), "/const");
}

TEST(JsonSchemaErrors, Limits) {
  json deep = {{"type", "string"}};
  for (int i = 0; i < 70; ++i) deep = {{"type", "array"}, {"items", deep}};
  expect_error(deep, "/items/items/items", "deeper than 64");

  json document = json::array();
  for (int i = 0; i < 300; ++i) document = json::array({document});
  expect_error(json{{"default", document}}, "/default/0/0", "deeper than 256");

  json many = {{"anyOf", json::array()}};
  for (int i = 0; i <= 10100; ++i) many["anyOf"].push_back({{"type", "integer"}, {"minimum", i}});
  expect_error(many, "/anyOf/", "more than 10000 rules");

  expect_error(json::parse(R"({"type":"string","maxLength":10001})"), "/maxLength");
  expect_error(json::parse(R"({"type":"array","minItems":20000})"), "/minItems");
}

}  // namespace
}  // namespace hearth
