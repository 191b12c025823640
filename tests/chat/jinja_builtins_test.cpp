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

// transformers' tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False) with those positional names, so `tojson(true)` means ensure_ascii.
TEST(JinjaBuiltins, ToJsonIsPythonJsonDumps) {
  const Case cases[] = {
      // ensure_ascii escapes everything outside ' '..'~' (DEL too) as lowercase \uXXXX, code
      // points above U+FFFF as a surrogate pair; the default writes UTF-8 as is.
      {R"J({{ s | tojson(ensure_ascii=true) }}|{{ s | tojson }}|{{ s | tojson(ensure_ascii=false) }})J",
       R"J({"s": "aé€😀\u0001\"\\/<>&'\n\t"})J",
       R"J("a\u00e9\u20ac\ud83d\ude00\u0001\"\\/<>&'\n\t"|"aé€😀\u0001\"\\/<>&'\n\t"|"aé€😀\u0001\"\\/<>&'\n\t")J"},
      {R"J({{ s | tojson(true) }}|{{ s | tojson(1) }}|{{ s | tojson(0) }})J", R"J({"s": "𝄞 Ω ß"})J",
       R"J("\ud834\udd1e \u03a9 \u00df"|"\ud834\udd1e \u03a9 \u00df"|"𝄞 Ω ß")J"},
      {R"J({{ s | tojson(ensure_ascii=true) }})J", R"J({"s": "\u007f~ \uffff\ud800\udc00"})J",
       R"J("\u007f~ \uffff\ud800\udc00")J"},
      {R"J({{ s | tojson }})J", R"J({"s": "\u007f"})J", "\"\x7f\""},
      // Keys are escaped like values.
      {R"J({{ d | tojson(ensure_ascii=true, indent=2) }})J",
       R"J({"d": {"naïve": ["日本", {"k": "ü"}], "plain": "x"}})J", R"J({
  "na\u00efve": [
    "\u65e5\u672c",
    {
      "k": "\u00fc"
    }
  ],
  "plain": "x"
})J"},
      // separators = (item, key) replace both defaults, with or without indent.
      {R"J({{ d | tojson(indent=2, separators=(',', '=')) }}|{{ d | tojson(separators=[';', ':']) }}|{{ d | tojson(separators=(',', ':')) }})J",
       R"J({"d": {"b": [1, 2], "a": {}}})J", R"J({
  "b"=[
    1,
    2
  ],
  "a"={}
}|{"b":[1;2];"a":{}}|{"b":[1,2],"a":{}})J"},
      // indent: a string is used as is, an int n is n spaces (0 and negatives: just newlines),
      // True is 1.
      {R"J({{ d | tojson(indent='\t') }}|{{ d | tojson(indent=0) }}|{{ d | tojson(indent=-3) }}|{{ d | tojson(indent=true) }}|{{ d | tojson(indent='ab', separators=('', '')) }})J",
       R"J({"d": {"b": [1, 2], "a": {}}})J",
       "{\n\t\"b\": [\n\t\t1,\n\t\t2\n\t],\n\t\"a\": {}\n}|"
       "{\n\"b\": [\n1,\n2\n],\n\"a\": {}\n}|"
       "{\n\"b\": [\n1,\n2\n],\n\"a\": {}\n}|"
       "{\n \"b\": [\n  1,\n  2\n ],\n \"a\": {}\n}|"
       "{\nab\"b\"[\nabab1\nabab2\nab]\nab\"a\"{}\n}"},
      // sort_keys orders by code point, at every level.
      {R"J({{ d | tojson(sort_keys=true) }}|{{ d | tojson(sort_keys=true, indent=1) }}|{{ d | tojson(false, none, none, true) }})J",
       R"J({"d": {"b": 1, "B": {"z": 0, "y": 1}, "a": 0, "é": 2, "_": 3}})J",
       R"J({"B": {"y": 1, "z": 0}, "_": 3, "a": 0, "b": 1, "é": 2}|{
 "B": {
  "y": 1,
  "z": 0
 },
 "_": 3,
 "a": 0,
 "b": 1,
 "é": 2
}|{"B": {"y": 1, "z": 0}, "_": 3, "a": 0, "b": 1, "é": 2})J"},
      {R"J({{ [1.0, 1e-05, 1e16, 0.1, -0.0, 123456789012345678] | tojson }}|{{ none | tojson }}|{{ true | tojson }}|{{ [] | tojson(indent=2) }}|{{ {} | tojson(indent=2) }})J",
       R"J({})J", R"J([1.0, 1e-05, 1e+16, 0.1, -0.0, 123456789012345678]|null|true|[]|{})J"},
      // Bad arguments and values JSON cannot hold.
      {R"J({{ [1] | tojson(separators=(',',)) }})J", R"J({})J", nullptr},
      {R"J({{ [1] | tojson(separators=1) }})J", R"J({})J", nullptr},
      {R"J({{ [1] | tojson(separators=(1, 2)) }})J", R"J({})J", nullptr},
      {R"J({{ [1] | tojson(indent=2.5) }})J", R"J({})J", nullptr},
      {R"J({{ [1] | tojson(bogus=1) }})J", R"J({})J", nullptr},
      {R"J({{ [1] | tojson(false, none, none, false, 1) }})J", R"J({})J", nullptr},
      {R"J({{ [1] | tojson(true, ensure_ascii=true) }})J", R"J({})J", nullptr},
      {R"J({{ (range(3) | map('string')) | tojson }})J", R"J({})J", nullptr},
      {R"J({{ namespace(a=1) | tojson }})J", R"J({})J", nullptr},
      {R"J({{ x | tojson }})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

TEST(JinjaBuiltins, ToJsonIndentIsBoundedByTheOutputLimit) {
  RenderOptions opt;
  opt.limits.max_output_bytes = 1 << 12;
  for (const char* src : {"{{ [[[[1]]]] | tojson(indent=100000000000) }}",
                          "{{ [[[[[[[[1]]]]]]]] | tojson(indent=200) }}"}) {
    SCOPED_TRACE(src);
    try {
      Template::parse(src).render(json::object(), opt);
      ADD_FAILURE() << "rendered";
    } catch (const TemplateError& e) {
      EXPECT_EQ(e.kind(), TemplateError::Kind::Limit) << e.what();
    }
  }
}

// Dict literals keep their keys' types; keys compare as Python's (1 == 1.0 == True is one key,
// 0 and "0" are two), and lookups, `in`, iteration, methods and filters see the real keys.
TEST(JinjaBuiltins, DictKeysKeepTheirTypes) {
  const Case cases[] = {
      {R"J({% set d = {0: 0, 512: 128, '0': 'zero'} %}{{ d[512] }}|{{ d[0] }}|{{ d['0'] }}|{{ d['512'] }}|{{ d }}|{{ d | length }})J",
       R"J({})J", R"J(128|0|zero||{0: 0, 512: 128, '0': 'zero'}|3)J"},
      // Equal keys merge: the first key stays, the last value wins.
      {R"J({% set d = {1: 'a', true: 'b', 1.0: 'c', 2: 'x'} %}{{ d }}|{{ d[1] }}|{{ d[true] }}|{{ d[1.0] }}|{{ 1 in d }}|{{ true in d }}|{{ '1' in d }}|{{ 2.0 in d }})J",
       R"J({})J", R"J({1: 'c', 2: 'x'}|c|c|c|True|True|False|True)J"},
      {R"J({% set d = {none: 'n', false: 'f', 0: 'z', -3: 'neg', 2.5: 'f2'} %}{{ d }}|{{ d[none] }}|{{ d[0] }}|{{ d[-3] }}|{{ d[2.5] }}|{{ none in d }})J",
       R"J({})J", R"J({None: 'n', False: 'z', -3: 'neg', 2.5: 'f2'}|n|z|neg|f2|True)J"},
      {R"J({% set d = {(1, 2): 'pair', 'x': 1} %}{{ d[(1, 2)] }}|{{ d }}|{{ (1, 2) in d }})J",
       R"J({})J", R"J(pair|{(1, 2): 'pair', 'x': 1}|True)J"},
      // dictsort orders ints as ints; items/keys/values keep insertion order.
      {R"J({% set d = {512: 128, 0: 0, 64: 32} %}{{ d | dictsort }}|{{ d | dictsort(reverse=true) }}|{{ d | dictsort(by='value') }}|{{ d.items() | list }}|{{ d.keys() | list }}|{{ d.values() | list }})J",
       R"J({})J",
       R"J([(0, 0), (64, 32), (512, 128)]|[(512, 128), (64, 32), (0, 0)]|[(0, 0), (64, 32), (512, 128)]|[(512, 128), (0, 0), (64, 32)]|[512, 0, 64]|[128, 0, 32])J"},
      {R"J({% set d = {10: 'a', 9: 'b', 100: 'c'} %}{% for k, v in d | dictsort %}{{ k }}={{ v }} {% endfor %}|{% for k in d %}{{ k + 1 }} {% endfor %}|{% for k, v in d.items() %}{{ k * 2 }}:{{ v }} {% endfor %})J",
       R"J({})J", R"J(9=b 10=a 100=c |11 10 101 |20:a 18:b 200:c )J"},
      {R"J({% set d = {'B': 1, 'a': 2, 'c': 0} %}{{ d | dictsort }}|{{ d | dictsort(true) }}|{{ {'b': 1, 2: 1} | dictsort(by='value') }})J",
       R"J({})J",
       R"J([('a', 2), ('B', 1), ('c', 0)]|[('B', 1), ('a', 2), ('c', 0)]|[('b', 1), (2, 1)])J"},
      {R"J({% set d = {1: 'a', 'b': 2} %}{{ d.get(1) }}|{{ d.get('1') }}|{{ d.get('b') }}|{{ d.get(2, 'dflt') }}|{{ d | items | list }}|{{ d | tojson }}|{{ d.copy() }}|{{ dict(d) }})J",
       R"J({})J",
       R"J(a|None|2|dflt|[(1, 'a'), ('b', 2)]|{"1": "a", "b": 2}|{1: 'a', 'b': 2}|{1: 'a', 'b': 2})J"},
      {R"J({% set a = {1: 'x', 'k': [1]} %}{% set b = {'k': [1], 1.0: 'x'} %}{{ a == b }}|{{ a == {'1': 'x', 'k': [1]} }})J",
       R"J({})J", R"J(True|False)J"},
      // JSON objects keep str keys: an int does not find them.
      {R"J({{ d[0] }}|{{ d['0'] }}|{{ 0 in d }}|{{ '0' in d }})J", R"J({"d": {"0": "s"}})J",
       R"J(|s|False|True)J"},
      // make_attrgetter reads all-digit attribute parts as ints.
      {R"J({{ [{0: 'int', '0': 'str'}] | map(attribute='0') | list }}|{{ [[5, 6]] | map(attribute='1') | list }}|{{ [{'a': {2: 'deep'}}] | map(attribute='a.2') | list }})J",
       R"J({})J", R"J(['int']|[6]|['deep'])J"},
      // tojson writes None/bool/int/float keys as JSON text; sort_keys sorts the keys first.
      {R"J({{ {2: 1, 10: 2, 1: 0, true: 5} | tojson(sort_keys=true) }}|{{ {none: 1, false: 2, 1.5: 3, 1e16: 4} | tojson }})J",
       R"J({})J", R"J({"1": 5, "2": 1, "10": 2}|{"null": 1, "false": 2, "1.5": 3, "1e+16": 4})J"},
      {R"J({{ {'a': 1}[[1]] }})J", R"J({})J", R"J()J"},
      // The attr filter is getattr: a dict's keys are not attributes, its methods are.
      {R"J({% set d = {0: 'int', '0': 'str'} %}{{ d['0'] }}{{ d[0] }}|{{ d | attr('0') }}|{{ d.0 }})J",
       R"J({})J", R"J(strint||int)J"},
      {R"J({{ namespace(a=1) | attr('a') }}|{{ {'a': 1} | attr('a') }}|{% for x in [1] %}{{ loop | attr('index') }}{% endfor %}|{{ {'a': 1} | attr('items') is callable }}|{{ 'ab' | attr('upper') is callable }}|{{ {'a': 1} | attr('zz') is defined }})J",
       R"J({})J", R"J(1||1|True|True|False)J"},
      // Unhashable keys, unorderable keys, keys JSON cannot write.
      {R"J({{ {[1]: 2} }})J", R"J({})J", nullptr},
      {R"J({{ {{'a': 1}: 2} }})J", R"J({})J", nullptr},
      {R"J({{ [1] in {'a': 1} }})J", R"J({})J", nullptr},
      {R"J({{ {'a': 1}.get([1]) }})J", R"J({})J", nullptr},
      {R"J({% set d = {1: 'a', 'b': 2} %}{{ d | dictsort }})J", R"J({})J", nullptr},
      {R"J({{ {1: 2, 'a': 3} | tojson(sort_keys=true) }})J", R"J({})J", nullptr},
      {R"J({{ {(1, 2): 2} | tojson }})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

// groupby = sorted by the key, then runs of equal keys; (grouper, list) tuples with names.
TEST(JinjaBuiltins, GroupBy) {
  const char* users =
      R"J({"users": [{"name": "a", "city": "Rome"}, {"name": "b", "city": "Oslo"}, {"name": "c", "city": "rome"}, {"name": "d", "city": "Oslo"}]})J";
  const Case cases[] = {
      // Case-insensitive by default; the grouper keeps the first member's spelling.
      {R"J({% for g in users | groupby('city') %}{{ g.grouper }}: {{ g.list | map(attribute='name') | join(', ') }}; {% endfor %})J",
       users, R"J(Oslo: b, d; Rome: a, c; )J"},
      {R"J({% for city, items in users | groupby('city', case_sensitive=true) %}{{ city }}={{ items | length }} {% endfor %}|{{ users | groupby('city') | map(attribute='grouper') | list }})J",
       users, R"J(Oslo=2 Rome=1 rome=1 |['Oslo', 'Rome'])J"},
      {R"J({{ users | groupby('city') | tojson }}|{{ (users | groupby('city'))[1].list | length }}|{{ (users | groupby('city')) | length }})J",
       R"J({"users": [{"name": "a", "city": "Rome"}, {"name": "b", "city": "Oslo"}, {"name": "c", "city": "rome"}]})J",
       R"J([["Oslo", [{"name": "b", "city": "Oslo"}]], ["Rome", [{"name": "a", "city": "Rome"}, {"name": "c", "city": "rome"}]]]|2|2)J"},
      // default= stands in for a missing attribute.
      {R"J({{ users | groupby('city', default='??') }})J",
       R"J({"users": [{"name": "a", "city": "Rome"}, {"name": "b"}, {"name": "c", "city": "Oslo"}]})J",
       R"J([('??', [{'name': 'b'}]), ('Oslo', [{'name': 'c', 'city': 'Oslo'}]), ('Rome', [{'name': 'a', 'city': 'Rome'}])])J"},
      // Int attributes index; dotted paths; numbers sort as numbers; None groups the items.
      {R"J({{ [[1, 'a'], [0, 'b'], [1, 'c']] | groupby(0) }}|{{ [[1, 'a'], [0, 'b'], [1, 'c']] | groupby('0') | list }}|{{ [] | groupby('x') }})J",
       R"J({})J",
       R"J([(0, [[0, 'b']]), (1, [[1, 'a'], [1, 'c']])]|[(0, [[0, 'b']]), (1, [[1, 'a'], [1, 'c']])]|[])J"},
      {R"J({{ xs | groupby('a.b') }}|{{ (xs | groupby('a.b'))[0][0] }}|{{ (xs | groupby('a.b'))[0].list[0].a.b }})J",
       R"J({"xs": [{"a": {"b": 2}}, {"a": {"b": 1}}, {"a": {"b": 2}}]})J",
       R"J([(1, [{'a': {'b': 1}}]), (2, [{'a': {'b': 2}}, {'a': {'b': 2}}])]|1|1)J"},
      {R"J({{ [3, 1, 3, 2] | groupby(none) }}|{{ ['b', 'A', 'a'] | groupby(none) }}|{{ ['b', 'A', 'a'] | groupby(none, case_sensitive=true) | list }})J",
       R"J({})J",
       R"J([(1, [1]), (2, [2]), (3, [3, 3])]|[('A', ['A', 'a']), ('b', ['b'])]|[('A', ['A']), ('a', ['a']), ('b', ['b'])])J"},
      // A single member is never compared, so an undefined key survives; undefined is empty.
      {R"J({{ users | groupby('city') }})J", R"J({"users": [{"name": "b"}]})J",
       R"J([(Undefined, [{'name': 'b'}])])J"},
      {R"J({{ x | groupby('a') }})J", R"J({})J", R"J([])J"},
      // Keys Python cannot order, None input, no attribute.
      {R"J({{ users | groupby('city') }})J",
       R"J({"users": [{"name": "a", "city": "Rome"}, {"name": "b"}]})J", nullptr},
      {R"J({{ [{'k': 1}, {'k': 'a'}] | groupby('k') }})J", R"J({})J", nullptr},
      {R"J({{ none | groupby('x') }})J", R"J({})J", nullptr},
      {R"J({{ [3] | groupby() }})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

// slice(n) makes n columns, the first len % n one item longer; fill_with pads the others.
TEST(JinjaBuiltins, Slice) {
  const Case cases[] = {
      {R"J({{ [1,2,3,4,5,6,7] | slice(3) | list }}|{{ [1,2,3,4,5,6,7] | slice(3, 0) | list }}|{{ [1,2,3,4,5,6] | slice(3, 'x') | list }}|{{ [1,2] | slice(4) | list }}|{{ [1,2] | slice(4, fill_with='-') | list }}|{{ [] | slice(2) | list }}|{{ 'abcde' | slice(2) | list }})J",
       R"J({})J",
       R"J([[1, 2, 3], [4, 5], [6, 7]]|[[1, 2, 3], [4, 5, 0], [6, 7, 0]]|[[1, 2, 'x'], [3, 4, 'x'], [5, 6, 'x']]|[[1], [2], [], []]|[[1], [2], ['-'], ['-']]|[[], []]|[['a', 'b', 'c'], ['d', 'e']])J"},
      {R"J({% for col in range(10) | slice(3) %}[{% for x in col %}{{ x }}{% endfor %}]{% endfor %}|{{ [1,2,3] | slice(-1) | list }}|{{ [1,2,3] | slice(1) | list }}|{{ [1, 2, 3] | slice(3, none) | list }})J",
       R"J({})J", R"J([0123][456][789]|[]|[[1, 2, 3]]|[[1], [2], [3]])J"},
      {R"J({{ x | slice(2) | list }})J", R"J({})J", R"J([[], []])J"},
      {R"J({{ [1,2,3] | slice(0) | list }})J", R"J({})J", nullptr},
      {R"J({{ [1,2,3] | slice(1.5) | list }})J", R"J({})J", nullptr},
      {R"J({{ [1,2,3] | slice('2') | list }})J", R"J({})J", nullptr},
      {R"J({{ none | slice(2) | list }})J", R"J({})J", nullptr},
      // Python would build ten billion lists; the render limits refuse.
      {R"J({{ [1,2,3] | slice(10000000000) | list }})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

// `for ... recursive`: loop(items) renders the same body (filter and else block included) for
// items, one level deeper, and returns the text; loop.depth/depth0 count the levels.
TEST(JinjaBuiltins, RecursiveForLoops) {
  const Case cases[] = {
      {R"J({% for x in items recursive %}[{{ x.name }}:{{ loop.depth }}/{{ loop.depth0 }}/{{ loop.index }}{% if x.children %}({{ loop(x.children) }}){% endif %}]{% endfor %})J",
       R"J({"items": [{"name": "a", "children": [{"name": "b"}, {"name": "c", "children": [{"name": "d"}]}]}, {"name": "e"}]})J",
       R"J([a:1/0/1([b:2/1/1][c:2/1/2([d:3/2/1])])][e:1/0/2])J"},
      // The result is a string (filters apply); an empty inner call runs the else block.
      {R"J({% for x in items recursive %}{{ x.n }}{% if x.c %}<{{ loop(x.c) | upper }}>{% endif %}{% else %}none{% endfor %})J",
       R"J({"items": [{"n": "a", "c": []}, {"n": "b", "c": [{"n": "x", "c": []}]}]})J",
       R"J(ab<X>)J"},
      {R"J({% for x in items recursive %}{{ x.n }}<{{ loop(x.c) }}>{% else %}none{% endfor %})J",
       R"J({"items": [{"n": "a", "c": []}, {"n": "b", "c": [{"n": "x", "c": []}]}]})J",
       R"J(a<none>b<x<none>>)J"},
      {R"J({% for x in [] recursive %}{{ x }}{% else %}empty{% endfor %})J", R"J({})J",
       R"J(empty)J"},
      // The loop filter applies at every level.
      {R"J({% for x in items if x.keep recursive %}{{ x.n }}{% if x.c %}({{ loop(x.c) }}){% endif %}{% endfor %})J",
       R"J({"items": [{"n": "a", "keep": true, "c": [{"n": "b", "keep": false}, {"n": "c", "keep": true}]}, {"n": "z", "keep": false}]})J",
       R"J(a(c))J"},
      // Unpacking targets, whitespace control around the call.
      {R"J({% for k, v in d.items() recursive %}{{ k }}{% if v is mapping %}{ {{- loop(v.items()) -}} }{% else %}={{ v }}{% endif %}{{ ',' if not loop.last }}{% endfor %})J",
       R"J({"d": {"a": 1, "b": {"c": 2, "d": {"e": 3}}, "f": 4}})J", R"J(a=1,b{c=2,d{e=3}},f=4)J"},
      {R"J({% for x in [1, 2] recursive %}{{ x }}{% if x < 2 %}{{ loop([x + 1]) }}{% endif %}{% endfor %})J",
       R"J({})J", R"J(122)J"},
      // Each level has its own loop state; break ends only the level it is in.
      {R"J({% for x in [1, 2] recursive %}{{ loop.length }}{{ loop.first }}{{ loop.cycle('a', 'b') }}{% if x == 1 %}({{ loop([5, 6, 7]) }}){% endif %}{% endfor %})J",
       R"J({})J", R"J(2Truea(3Truea3Falseb3Falsea)2Falseb)J"},
      {R"J({% for x in [1, 2, 3] recursive %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% if x == 1 %}[{{ loop([7, 2, 8]) }}]{% endif %}{% endfor %})J",
       R"J({})J", R"J(1[7])J"},
      {R"J({% for x in items recursive %}{{ loop.depth }}{{ loop.previtem }}{{ loop.nextitem }}{% if x is iterable %}{{ loop(x) }}{% endif %}{% endfor %})J",
       R"J({"items": [1, [2, 3]]})J", R"J(1[2, 3]112322)J"},
      {R"J({% for x in [1] recursive %}{% set y = 5 %}{{ y }}{% endfor %}{{ y }})J", R"J({})J",
       R"J(5)J"},
      // The loop can be handed to a macro and called there.
      {R"J({% macro m(l) %}{{ l([3]) }}{% endmacro %}{% for x in [1, 2] recursive %}{{ x }}{% if x == 1 %}{{ m(loop) }}{% endif %}{% endfor %})J",
       R"J({})J", R"J(132)J"},
      {R"J({% for x in [1] %}{{ loop is callable }}{% endfor %})J", R"J({})J", R"J(True)J"},
      // Without the marker, with bad arguments, or never ending: errors.
      {R"J({% for x in [1] %}{{ loop([2]) }}{% endfor %})J", R"J({})J", nullptr},
      {R"J({% set outer = 'o' %}{% for x in [[1, [2, [3]]]] recursive %}{% for y in x %}{% if y is iterable %}{{ loop(y) }}{% endif %}{% endfor %}{% endfor %})J",
       R"J({})J", nullptr},
      {R"J({% for x in [1] recursive %}{{ loop() }}{% endfor %})J", R"J({})J", nullptr},
      {R"J({% for x in [1] recursive %}{{ loop(none) }}{% endfor %})J", R"J({})J", nullptr},
      {R"J({% for x in [1] recursive %}{{ loop(x) }}{% endfor %})J", R"J({})J", nullptr},
      {R"J({% for x in [1] recursive %}{{ loop([1]) }}{% endfor %})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

TEST(JinjaBuiltins, RecursiveLoopErrorsAreClear) {
  auto error_of = [](const char* src) {
    try {
      Template::parse(src).render(json::object());
    } catch (const TemplateError& e) {
      return e;
    }
    ADD_FAILURE() << "rendered " << src;
    return TemplateError(TemplateError::Kind::Runtime, {}, "");
  };
  EXPECT_EQ(error_of("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}").kind(),
            TemplateError::Kind::Limit);
  EXPECT_EQ(error_of("{% for x in [1] %}{{ loop([2]) }}{% endfor %}").kind(),
            TemplateError::Kind::Type);
  // Python would still run a loop stored past its end; here it is refused (its scope is gone).
  EXPECT_EQ(error_of("{% set ns = namespace() %}{% for x in [1] recursive %}{% set ns.l = loop "
                     "%}{% endfor %}{{ ns.l([2]) }}")
                .kind(),
            TemplateError::Kind::Runtime);
  // The parser wants `recursive` after the filter, as Jinja does.
  EXPECT_THROW(Template::parse("{% for x in y recursive if x %}{% endfor %}"), TemplateError);
}

// wordwrap = Python's textwrap.wrap on each line (expand_tabs and replace_whitespace off),
// joined by wrapstring. These outputs, and thousands of random strings of words, hyphens,
// dashes, punctuation and whitespace, were checked against Python.
TEST(JinjaBuiltins, WordWrap) {
  const Case cases[] = {
      {R"J({{ s | wordwrap(20) }})J",
       R"J({"s": "The quick brown fox jumps over the lazy dog and keeps running far away."})J",
       "The quick brown fox\njumps over the lazy\ndog and keeps\nrunning far away."},
      {R"J({{ s | wordwrap }})J",
       R"J({"s": "This text is exactly long enough that the default width of seventy-nine characters has to break it somewhere."})J",
       "This text is exactly long enough that the default width of seventy-nine\n"
       "characters has to break it somewhere."},
      // Long words are cut at the width, or kept whole with break_long_words=false.
      {R"J({{ s | wordwrap(10, wrapstring='|') }}|{{ s | wordwrap(10, false, '|') }}|{{ s | wordwrap(4, wrapstring='|') }})J",
       R"J({"s": "a supercalifragilistic word"})J",
       R"J(a supercal|ifragilist|ic word|a|supercalifragilistic|word|a su|perc|alif|ragi|list|ic|word)J"},
      // Hyphenated words split after a hyphen between letters; a long word breaks after its last
      // hyphen that fits.
      {R"J({{ s | wordwrap(8, wrapstring='|') }}|{{ s | wordwrap(8, wrapstring='|', break_on_hyphens=false) }}|{{ s | wordwrap(5, wrapstring='|') }})J",
       R"J({"s": "well-known anti-inflammatory x-ray"})J",
       R"J(well-|known|anti-inf|lammator|y x-ray|well-kno|wn anti-|inflamma|tory|x-ray|well-|known|anti-|infla|mmato|ry|x-ray)J"},
      // Python checks `break_on_hyphens is True` when splitting words, its truth when cutting.
      {R"J({{ 'x aa-bbbb' | wordwrap(7, wrapstring='|') }}/{{ 'x aa-bbbb' | wordwrap(7, wrapstring='|', break_on_hyphens=1) }}/{{ 'x aa-bbbb' | wordwrap(7, wrapstring='|', break_on_hyphens=false) }}/{{ 'aabb-ccdd' | wordwrap(6, wrapstring='|', break_on_hyphens=1) }}/{{ 'aabb-ccdd' | wordwrap(6, wrapstring='|', break_on_hyphens=0) }}/{{ '--aabbcc' | wordwrap(4, wrapstring='|') }})J",
       R"J({})J", R"J(x aa-|bbbb/x|aa-bbbb/x|aa-bbbb/aabb-|ccdd/aabb-c|cdd/--aa|bbcc)J"},
      // Em-dashes (two or more '-') between words are chunks of their own.
      {R"J({{ s | wordwrap(9, wrapstring='|') }}|{{ s | wordwrap(6, wrapstring='|') }})J",
       R"J({"s": "Hello there -- you goof-ball, use the -b option!"})J",
       R"J(Hello|there --|you goof-|ball, use|the -b|option!|Hello|there|-- you|goof-|ball,|use|the -b|option|!)J"},
      {R"J({{ s | wordwrap(6, wrapstring='|') }})J", R"J({"s": "wait--what? yes---no"})J",
       R"J(wait--|what?|yes---|no)J"},
      {R"J({{ s | wordwrap(3, wrapstring='|') }}|{{ s | wordwrap(3, true, '|', 1) }})J",
       R"J({"s": "ab-cd-ef --gh"})J", R"J(ab-|cd-|ef |--g|h|ab-|cd-|ef |--g|h)J"},
      // Each line is wrapped on its own and empty lines stay; whitespace at line breaks goes,
      // tabs are kept inside lines.
      {R"J({{ s | wordwrap(10) | tojson }})J",
       R"J({"s": "first paragraph is long\n\nsecond  \tone\r\nthird"})J",
       R"J("first\nparagraph\nis long\n\nsecond\none\nthird")J"},
      {R"J({{ s | wordwrap(12) | tojson }})J", R"J({"s": "a\tb  c d e f g h"})J",
       R"J("a\tb  c d e f\ng h")J"},
      // Widths count code points.
      {R"J({{ s | wordwrap(5, wrapstring='|') }}|{{ s | wordwrap(3, wrapstring='|') }})J",
       R"J({"s": "héllo wörld ñandú"})J", R"J(héllo|wörld|ñandú|hél|lo |wör|ld |ñan|dú)J"},
      {R"J({{ '   ' | wordwrap(2) | tojson }}|{{ '' | wordwrap(0) }}|{{ 'a  b' | wordwrap(1) | tojson }})J",
       R"J({})J", R"J(""||"a\nb")J"},
      {R"J({{ 'a' | wordwrap(0) }})J", R"J({})J", nullptr},
      {R"J({{ 5 | wordwrap }})J", R"J({})J", nullptr},
      {R"J({{ x | wordwrap }})J", R"J({})J", nullptr},
      {R"J({{ none | wordwrap }})J", R"J({})J", nullptr},
      {R"J({{ 'a b' | wordwrap(1, wrapstring=3) }})J", R"J({})J", nullptr},
  };
  check_cases(cases);
}

}  // namespace
}  // namespace hearth::chat
