// Jinja's groupby and slice filters (Jinja2 3.1 semantics, Python's sorted/itertools.groupby).
#include <algorithm>
#include <numeric>

#include "chat/builtins.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

constexpr std::string_view kGroupFields[] = {"grouper", "list"};

Value group_tuple(Value grouper, std::vector<Value> members) {
  Value t = Value::tuple({std::move(grouper), Value::list(std::move(members))});
  t.list_data().field_names = kGroupFields;
  return t;
}

}  // namespace

// sorted(value, key) then itertools.groupby(key): a list of (grouper, list) named tuples in key
// order. Without case_sensitive, strings are grouped lower-cased but each grouper is the first
// member's own spelling.
Value filter_groupby(Interpreter& in, const Value& v, const CallArgs& a) {
  const Value& attribute = call_arg(a, 0, "attribute");
  if (attribute.is_undefined())
    in.fail(Kind::Type, "groupby() missing 1 required positional argument: 'attribute'");
  const Value& dflt = call_arg(a, 1, "default");
  const bool case_sensitive = call_arg(a, 2, "case_sensitive").truthy();
  const Value* dp = dflt.is_undefined() || dflt.is_none() ? nullptr : &dflt;
  const std::vector<Value> items = iterable_items(in, v);
  in.charge(items.size() * 8);
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const auto& item : items)
    keys.push_back(fold_case(attr_lookup(in, item, attribute, dp), case_sensitive));
  std::vector<size_t> order(items.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // The keys are already folded, so they compare exactly (as Python compares them).
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t x, size_t y) { return sort_less(in, keys[x], keys[y], true); });
  std::vector<Value> groups;
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    while (j < order.size() && py_equal(keys[order[i]], keys[order[j]])) ++j;
    std::vector<Value> members;
    members.reserve(j - i);
    for (size_t k = i; k < j; ++k) members.push_back(items[order[k]]);
    Value grouper = case_sensitive ? keys[order[i]] : attr_lookup(in, members[0], attribute, dp);
    groups.push_back(group_tuple(std::move(grouper), std::move(members)));
    i = j;
  }
  return Value::list(std::move(groups));
}

// Splits the items into `slices` columns, the first len % slices of them one longer; with
// fill_with, the shorter columns are padded by one.
Value filter_slice(Interpreter& in, const Value& v, const CallArgs& a) {
  const Value& n = call_arg(a, 0, "slices");
  if (!n.is_number() || n.is_float())
    in.fail(Kind::Type, "slice: the number of slices must be an integer, not " + n.type_name());
  const Value& fill = call_arg(a, 1, "fill_with");
  const bool pad = !fill.is_undefined() && !fill.is_none();
  const std::vector<Value> items = iterable_items(in, v);
  const int64_t slices = n.as_int();
  if (slices == 0) in.fail(Kind::Runtime, "integer division or modulo by zero");
  if (slices < 0) return Value::generator({});
  if (static_cast<uint64_t>(slices) > in.options().limits.max_loop_iterations)
    in.fail(Kind::Limit, "slice: more slices than Limits::max_loop_iterations");
  in.charge(static_cast<uint64_t>(slices) * 4 + items.size());
  const size_t count = static_cast<size_t>(slices);
  const size_t per = items.size() / count;
  const size_t extra = items.size() % count;
  std::vector<Value> out;
  out.reserve(count);
  size_t start = 0;
  for (size_t i = 0; i < count; ++i) {
    const size_t len = per + (i < extra ? 1 : 0);
    std::vector<Value> column(items.begin() + static_cast<std::ptrdiff_t>(start),
                              items.begin() + static_cast<std::ptrdiff_t>(start + len));
    if (pad && i >= extra) column.push_back(fill);
    out.push_back(Value::list(std::move(column)));
    start += len;
  }
  return Value::generator(std::move(out));
}

}  // namespace hearth::chat
