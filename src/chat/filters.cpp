// Filter lookup: one table from every group's rows, built on first use; and the helpers the
// groups share.
#include "chat/filters.h"

#include <initializer_list>
#include <unordered_map>

namespace hearth::chat {
namespace {

using FilterTable = std::unordered_map<std::string_view, FilterFn>;

const FilterTable& filter_table() {
  static const FilterTable table = [] {
    FilterTable t;
    for (std::span<const NamedFilter> group :
         {string_filters(), value_filters(), sequence_filters(), ordering_filters()})
      for (const NamedFilter& f : group) t.emplace(f.name, f.fn);
    return t;
  }();
  return table;
}

}  // namespace

Value apply_filter(Interpreter& in, std::string_view name, const Value& v, CallArgs& args) {
  const FilterTable& table = filter_table();
  const auto it = table.find(name);
  if (it == table.end())
    in.fail(TemplateError::Kind::Runtime, "no filter named '" + std::string(name) + "'");
  return it->second(in, v, args);
}

bool has_filter(std::string_view name) {
  return filter_table().contains(name);
}

Value soft_str(const Value& v) {
  if (v.is_string()) return v;
  return Value::string(v.to_str(), false);
}

bool is_trusted_string(const Value& v) {
  return v.is_string() && v.str_ref().fully_trusted();
}

Value string_result(Interpreter& in, std::string s, bool trusted) {
  in.check_size(s.size());
  return Value::string(std::move(s), trusted);
}

}  // namespace hearth::chat
