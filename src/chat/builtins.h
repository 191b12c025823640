// Jinja's filters and tests, the Python methods templates call on str/list/dict, and the
// globals (range, namespace, dict, raise_exception, strftime_now).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/interpreter.h"
#include "chat/value.h"

namespace hearth::chat {

// Filters and tests raise TemplateError via in.fail (unknown names included). Each is one
// function in a table by name: filters in filters_*.cpp (filters.h), tests in builtin_tests.cpp.
Value apply_filter(Interpreter& in, std::string_view name, const Value& v, CallArgs& args);
bool apply_test(Interpreter& in, std::string_view name, const Value& v, CallArgs& args);
bool has_filter(std::string_view name);

// Python methods of str, list, dict (and loop.cycle). Mutating list/dict methods exist but
// raise a SecurityError when called, as in Jinja's immutable sandbox.
bool has_method(const Value& obj, std::string_view name);
Value call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args);
Value bound_method(const Value& obj, std::string_view name);

// A global function (range, namespace, ...) or null.
const Value* find_global(std::string_view name);

// Python's `str % args` (printf-style: %s %r %d %i %f %x %%).
Value python_percent_format(Interpreter& in, const Value& fmt, const Value& args);

// A call's argument by position, else by keyword; Undefined when absent.
const Value& call_arg(const CallArgs& a, size_t i, std::string_view kw);
// An optional int argument: dflt when absent or None, a TypeError when not an int.
int64_t int_arg(Interpreter& in, const Value& v, int64_t dflt, const char* what);

// Jinja's make_attrgetter: `attribute` is a dotted str path (all-digit parts index as ints) or
// an int; with `dflt`, an undefined step becomes *dflt.
Value attr_lookup(Interpreter& in, const Value& item, const Value& attribute,
                  const Value* dflt = nullptr);
Value attr_path(Interpreter& in, const Value& item, const std::string& path);
// Python's `<` for sort keys; strings compare lower-cased unless case_sensitive. Raises a
// TemplateError where Python would (mixed types, undefined).
bool sort_less(Interpreter& in, const Value& a, const Value& b, bool case_sensitive);
// Jinja's ignore_case: lower-cases strings, leaves other values.
Value fold_case(const Value& v, bool case_sensitive);

// What a for loop would iterate over (list items, dict keys, characters); Undefined is empty.
std::vector<Value> iterable_items(Interpreter& in, const Value& v);

}  // namespace hearth::chat
