// Jinja's sequence filters: taking items out (first, last, select...), reshaping them (list,
// batch, slice, map...) and combining them (join, sum).
#include <algorithm>

#include "chat/filters.h"
#include "chat/py_string.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

Value items(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_undefined()) return Value::list();
  if (!v.is_dict() || v.dict_data().is_namespace)
    in.fail(Kind::Type, "Can only get item pairs from a mapping.");
  std::vector<Value> out;
  out.reserve(v.dict_data().items.size());
  for (const auto& [k, x] : v.dict_data().items) out.push_back(Value::tuple({k, x}));
  return Value::list(std::move(out));
}

Value to_list(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_list() && !v.list_data().is_generator && !v.list_data().is_tuple) return v;
  return Value::list(iterable_items(in, v));
}

Value first(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    if (v.str().empty()) return Value::undefined("No first item, sequence was empty.");
    size_t i = 0;
    py::decode(v.str(), i);
    return Value::string(v.str().substr(0, i), is_trusted_string(v));
  }
  const auto items = iterable_items(in, v);
  return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value last(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_list() && v.list_data().is_generator)
    in.fail(Kind::Type, "'generator' object is not reversible");
  const auto items = iterable_items(in, v);
  return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value reverse(Interpreter& in, const Value& v, CallArgs&) {
  if (v.is_string()) {
    auto off = utf8_offsets(v.str());
    std::string out;
    for (size_t i = off.size() - 1; i > 0; --i)
      out.append(v.str(), off[i - 1], off[i] - off[i - 1]);
    return string_result(in, std::move(out), is_trusted_string(v));
  }
  auto items = iterable_items(in, v);
  std::reverse(items.begin(), items.end());
  return Value::generator(std::move(items));
}

// The joined string keeps the template-text marks of the separator and of each item.
Value join(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& sep = call_arg(a, 0, "d");
  const Value& attr = call_arg(a, 1, "attribute");
  const auto items = iterable_items(in, v);
  auto d = std::make_shared<StrData>();
  const Value sepv = sep.is_undefined() ? Value::string("") : soft_str(sep);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) {
      append_ranges(d->trusted, d->s.size(), sepv.str_ref().trusted);
      d->s += sepv.str();
    }
    const Value item = attr.is_string() ? attr_path(in, items[i], attr.str()) : items[i];
    const Value s = soft_str(item);
    append_ranges(d->trusted, d->s.size(), s.str_ref().trusted);
    d->s += s.str();
    in.check_size(d->s.size());
  }
  return Value::string(std::move(d));
}

// map(attribute=..., default=...) or map(filter_name, args...).
Value map(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.truthy()) return Value::generator({});  // Jinja's `if value:` (as select_items)
  const auto items = iterable_items(in, v);
  std::vector<Value> out;
  out.reserve(items.size());
  in.charge(items.size());
  if (const Value* attr = a.kw("attribute")) {
    const Value* dflt = a.kw("default");
    for (const auto& item : items) {
      Value x = attr_path(in, item, attr->to_str());
      if (x.is_undefined() && dflt) x = *dflt;
      out.push_back(std::move(x));
    }
    return Value::generator(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string())
    in.fail(Kind::Runtime, "map needs a filter name or attribute=");
  const std::string filter = a.positional[0].str();
  CallArgs fa;
  fa.positional.assign(a.positional.begin() + 1, a.positional.end());
  fa.keyword = a.keyword;
  for (const auto& item : items) out.push_back(apply_filter(in, filter, item, fa));
  return Value::generator(std::move(out));
}

// select/reject/selectattr/rejectattr share this.
Value select_items(Interpreter& in, const Value& seq, CallArgs& a, bool by_attr, bool keep) {
  // Jinja guards these filters with `if value:`, so a falsy value (None, undefined, 0, "")
  // yields nothing before the arguments are even looked at: `tools | selectattr(...)` with
  // tools = None is an empty sequence.
  if (!seq.truthy()) return Value::generator({});
  const std::vector<Value> items = iterable_items(in, seq);
  size_t next_arg = 0;
  std::string attr;
  if (by_attr) {
    const Value& at = call_arg(a, 0, "attr");
    if (!at.is_string()) in.fail(Kind::Runtime, "selectattr/rejectattr need an attribute name");
    attr = at.str();
    next_arg = 1;
  }
  std::string test;
  CallArgs test_args;
  if (next_arg < a.positional.size()) {
    if (!a.positional[next_arg].is_string())
      in.fail(Kind::Runtime, "the test name must be a string");
    test = a.positional[next_arg].str();
    test_args.positional.assign(a.positional.begin() + static_cast<long>(next_arg) + 1,
                                a.positional.end());
  }
  std::vector<Value> out;
  in.charge(items.size());
  for (const auto& item : items) {
    const Value v = by_attr ? attr_path(in, item, attr) : item;
    const bool ok = test.empty() ? v.truthy() : apply_test(in, test, v, test_args);
    if (ok == keep) out.push_back(item);
  }
  return Value::generator(std::move(out));
}

Value select(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, false, true);
}
Value reject(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, false, false);
}
Value selectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, true, true);
}
Value rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
  return select_items(in, v, a, true, false);
}

// Lists of linecount items, the last one padded with fill_with when given.
Value batch(Interpreter& in, const Value& v, CallArgs& a) {
  const int64_t n = int_arg(in, call_arg(a, 0, "linecount"), 1, "linecount");
  if (n <= 0) in.fail(Kind::Runtime, "batch size must be positive");
  const Value& fill = call_arg(a, 1, "fill_with");
  const auto items = iterable_items(in, v);
  std::vector<Value> out, cur;
  for (const auto& item : items) {
    cur.push_back(item);
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (!fill.is_undefined() && !fill.is_none())
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(fill);
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::generator(std::move(out));
}

// Splits the items into `slices` columns, the first len % slices of them one longer; with
// fill_with, the shorter columns are padded by one.
Value slice(Interpreter& in, const Value& v, CallArgs& a) {
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

// Python's sum(): ints stay ints until they would overflow.
Value sum(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& attr = call_arg(a, 0, "attribute");
  Value total = call_arg(a, 1, "start");
  if (total.is_undefined()) total = Value::integer(0);
  for (const auto& item : iterable_items(in, v)) {
    const Value x = attr.is_string() ? attr_path(in, item, attr.str()) : item;
    if (!x.is_number() || !total.is_number())
      in.fail(Kind::Type, "unsupported operand type(s) for +: '" + total.type_name() + "' and '" +
                              x.type_name() + "'");
    if (x.is_float() || total.is_float()) {
      total = Value::number(total.as_float() + x.as_float());
    } else {
      int64_t r;
      total = __builtin_add_overflow(total.as_int(), x.as_int(), &r)
                  ? Value::number(total.as_float() + x.as_float())
                  : Value::integer(r);
    }
  }
  return total;
}

constexpr NamedFilter kSequenceFilters[] = {
    {"items", items},
    {"list", to_list},
    {"first", first},
    {"last", last},
    {"reverse", reverse},
    {"join", join},
    {"map", map},
    {"select", select},
    {"reject", reject},
    {"selectattr", selectattr},
    {"rejectattr", rejectattr},
    {"batch", batch},
    {"slice", slice},
    {"sum", sum},
};

}  // namespace

std::span<const NamedFilter> sequence_filters() {
  return kSequenceFilters;
}

}  // namespace hearth::chat
