// Jinja's filters that order or compare items by a key: sort, dictsort, unique, min, max and
// groupby (Python's sorted, itertools.groupby). Keys compare as Python's `<` (sort_less), strings
// case-folded unless case_sensitive.
#include <algorithm>
#include <numeric>

#include "chat/filters.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

// The item itself, or its attribute when `attr` is a str path.
Value key_of(Interpreter& in, const Value& item, const Value& attr) {
  return attr.is_string() ? attr_path(in, item, attr.str()) : item;
}

Value sort(Interpreter& in, const Value& v, CallArgs& a) {
  const bool reverse = call_arg(a, 0, "reverse").truthy();
  const bool cs = call_arg(a, 1, "case_sensitive").truthy();
  const Value& attr = call_arg(a, 2, "attribute");
  auto items = iterable_items(in, v);
  in.charge(items.size() * 8);
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    const Value kx = key_of(in, x, attr);
    const Value ky = key_of(in, y, attr);
    return reverse ? sort_less(in, ky, kx, cs) : sort_less(in, kx, ky, cs);
  });
  return Value::list(std::move(items));
}

// A mapping's (key, value) pairs sorted by key, or by value with by='value'.
Value dictsort(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_dict()) in.fail(Kind::Type, "dictsort: can only sort a mapping");
  const bool cs = call_arg(a, 0, "case_sensitive").truthy();
  const Value& by = call_arg(a, 1, "by");
  const bool by_value = by.is_string() && by.str() == "value";
  const bool reverse = call_arg(a, 2, "reverse").truthy();
  std::vector<Value> out;
  for (const auto& [k, x] : v.dict_data().items) out.push_back(Value::tuple({k, x}));
  std::stable_sort(out.begin(), out.end(), [&](const Value& p, const Value& q) {
    const size_t i = by_value ? 1 : 0;
    const Value& x = p.list_data().items[i];
    const Value& y = q.list_data().items[i];
    return reverse ? sort_less(in, y, x, cs) : sort_less(in, x, y, cs);
  });
  return Value::list(std::move(out));
}

// The first item of each key, in order (keys compare by ==, hence quadratic and charged so).
Value unique(Interpreter& in, const Value& v, CallArgs& a) {
  const bool cs = call_arg(a, 0, "case_sensitive").truthy();
  const Value& attr = call_arg(a, 1, "attribute");
  const auto items = iterable_items(in, v);
  std::vector<Value> out, seen;
  in.charge(items.size() * (items.size() / 64 + 1));
  for (const auto& item : items) {
    Value key = fold_case(key_of(in, item, attr), cs);
    bool dup = false;
    for (const auto& s : seen) dup = dup || py_equal(s, key);
    if (!dup) {
      seen.push_back(std::move(key));
      out.push_back(item);
    }
  }
  return Value::generator(std::move(out));
}

// min and max: the first item whose key no other key beats.
Value extreme(Interpreter& in, const Value& v, CallArgs& a, bool want_min) {
  const bool cs = call_arg(a, 0, "case_sensitive").truthy();
  const Value& attr = call_arg(a, 1, "attribute");
  const auto items = iterable_items(in, v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const Value ki = key_of(in, items[i], attr);
    const Value kb = key_of(in, items[best], attr);
    if (want_min ? sort_less(in, ki, kb, cs) : sort_less(in, kb, ki, cs)) best = i;
  }
  return items[best];
}

Value min(Interpreter& in, const Value& v, CallArgs& a) {
  return extreme(in, v, a, true);
}
Value max(Interpreter& in, const Value& v, CallArgs& a) {
  return extreme(in, v, a, false);
}

constexpr std::string_view kGroupFields[] = {"grouper", "list"};

Value group_tuple(Value grouper, std::vector<Value> members) {
  Value t = Value::tuple({std::move(grouper), Value::list(std::move(members))});
  t.list_data().field_names = kGroupFields;
  return t;
}

// groupby(attribute, default=None, case_sensitive=False): sorted(value, key) then
// itertools.groupby(key), a list of (grouper, list) named tuples in key order. Without
// case_sensitive, strings are grouped lower-cased but each grouper is the first member's own
// spelling.
Value groupby(Interpreter& in, const Value& v, CallArgs& a) {
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

constexpr NamedFilter kOrderingFilters[] = {
    {"sort", sort}, {"dictsort", dictsort}, {"unique", unique},
    {"min", min},   {"max", max},           {"groupby", groupby},
};

}  // namespace

std::span<const NamedFilter> ordering_filters() {
  return kOrderingFilters;
}

}  // namespace hearth::chat
