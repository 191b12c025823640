// Jinja's filters and tests, the Python methods templates call on str/list/dict, and the
// globals (range, namespace, dict, raise_exception, strftime_now).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "chat/interpreter.h"
#include "chat/value.h"

namespace hearth::chat {

// Filters and tests raise TemplateError via in.fail (unknown names included).
Value apply_filter(Interpreter& in, std::string_view name, const Value& v, CallArgs& args);
bool apply_test(Interpreter& in, std::string_view name, const Value& v, CallArgs& args);

// Python methods of str, list, dict (and loop.cycle). Mutating list/dict methods exist but
// raise a SecurityError when called, as in Jinja's immutable sandbox.
bool has_method(const Value& obj, std::string_view name);
Value call_method(Interpreter& in, const Value& obj, std::string_view name, CallArgs& args);
Value bound_method(const Value& obj, std::string_view name);

// A global function (range, namespace, ...) or null.
const Value* find_global(std::string_view name);

// Python's `str % args` (printf-style: %s %r %d %i %f %x %%).
Value python_percent_format(Interpreter& in, const Value& fmt, const Value& args);

// What a for loop would iterate over (list items, dict keys, characters); Undefined is empty.
std::vector<Value> iterable_items(Interpreter& in, const Value& v);

}  // namespace hearth::chat
