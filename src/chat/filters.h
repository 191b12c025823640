// The shape of the filter tables and what the filter groups share. Internal to chat/: each group
// file lists its filters by name, and apply_filter (filters.cpp) looks a name up across them, so
// adding a filter is one function and one table row in the file of its kind.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "chat/builtins.h"

namespace hearth::chat {

// A filter gets the value piped into it and the call's arguments.
using FilterFn = Value (*)(Interpreter& in, const Value& v, CallArgs& a);
struct NamedFilter {
  std::string_view name;
  FilterFn fn;
};

std::span<const NamedFilter> string_filters();    // filters_string.cpp: text in, text out
std::span<const NamedFilter> value_filters();     // filters_value.cpp: conversions, defaults
std::span<const NamedFilter> sequence_filters();  // filters_seq.cpp: picking and reshaping items
std::span<const NamedFilter> ordering_filters();  // filters_order.cpp: sorting, grouping by key

// Jinja's soft_str: str(value); Undefined prints as "".
Value soft_str(const Value& v);
// Whether v is a string made only of template text (a result derived from it alone keeps that).
bool is_trusted_string(const Value& v);
// A string a filter built, refused when over the output limit.
Value string_result(Interpreter& in, std::string s, bool trusted);

}  // namespace hearth::chat
