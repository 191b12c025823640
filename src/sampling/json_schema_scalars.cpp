// Strings, integers and numbers.
#include <cmath>

#include "sampling/gbnf_text.h"
#include "sampling/json_schema_converter.h"
#include "sampling/schema_int_range.h"
#include "sampling/schema_regex.h"
#include "util/error.h"

namespace hearth::gbnf {
namespace {

const json* number_keyword(const json& s, const char* key, const std::string& path,
                           bool boolean_ok) {
  if (!s.contains(key)) return nullptr;
  const json& v = s[key];
  if (boolean_ok && v.is_boolean()) return &v;
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    fail("{}: must be a number", child_path(path, key));
  return &v;
}

// The smallest integer a bound admits: minimum v → ceil(v), exclusiveMinimum v → floor(v) + 1
// (exact for integers beyond 2^53 too, which are not rounded through a double).
Decimal lowest_integer(const json& v, bool exclusive) {
  if (v.is_number_float())
    return exclusive ? decimal_add(decimal_floor(v.get<double>()), 1)
                     : decimal_ceil(v.get<double>());
  const Decimal d = v.is_number_unsigned() ? decimal_of_unsigned(v.get<unsigned long long>())
                                           : decimal_of(v.get<long long>());
  return exclusive ? decimal_add(d, 1) : d;
}

Decimal highest_integer(const json& v, bool exclusive) {
  if (v.is_number_float())
    return exclusive ? decimal_add(decimal_ceil(v.get<double>()), -1)
                     : decimal_floor(v.get<double>());
  const Decimal d = v.is_number_unsigned() ? decimal_of_unsigned(v.get<unsigned long long>())
                                           : decimal_of(v.get<long long>());
  return exclusive ? decimal_add(d, -1) : d;
}

// minimum / exclusiveMinimum (or the maxima) as one integer bound; draft 4's boolean
// exclusiveMinimum makes minimum exclusive.
std::optional<Decimal> integer_bound(const json& s, const std::string& path, bool lower) {
  const char* inclusive_key = lower ? "minimum" : "maximum";
  const char* exclusive_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
  const json* inc = number_keyword(s, inclusive_key, path, false);
  const json* exc = number_keyword(s, exclusive_key, path, true);
  std::optional<Decimal> out;
  auto tighten = [&](const Decimal& d) {
    const int c = out ? decimal_compare(d, *out) : 0;
    if (!out || (lower ? c > 0 : c < 0)) out = d;
  };
  const bool draft4_exclusive = exc != nullptr && exc->is_boolean() && exc->get<bool>();
  if (inc != nullptr)
    tighten(lower ? lowest_integer(*inc, draft4_exclusive)
                  : highest_integer(*inc, draft4_exclusive));
  if (exc != nullptr && exc->is_number())
    tighten(lower ? lowest_integer(*exc, true) : highest_integer(*exc, true));
  return out;
}

}  // namespace

std::string SchemaConverter::visit_string(const json& s, const std::string& path) {
  static const std::string kQuote = literal("\"");
  if (auto pattern = string_keyword(s, "pattern", path)) {
    const std::string content = pattern_to_gbnf(*pattern, child_path(path, "pattern"));
    return content.empty() ? literal("\"\"") : kQuote + " " + content + " " + kQuote;
  }
  if (auto format = string_keyword(s, "format", path)) {
    if (*format == "date" || *format == "time" || *format == "date-time" || *format == "uuid")
      return rules_.primitive(*format + "-string");
  }
  const std::optional<uint64_t> lo = count_keyword(s, "minLength", path);
  const std::optional<uint64_t> hi = count_keyword(s, "maxLength", path);
  if (!lo && !hi) return rules_.primitive("string");
  if (lo && hi && *lo > *hi)
    fail("{}: minLength is greater than maxLength", child_path(path, "minLength"));
  if (lo && *lo > kMaxRepeat)
    fail("{}: more than {} is not supported", child_path(path, "minLength"), kMaxRepeat);
  if (hi && *hi > kMaxRepeat)
    fail("{}: more than {} is not supported", child_path(path, "maxLength"), kMaxRepeat);
  if (hi && *hi == 0) return literal("\"\"");
  return kQuote + " " + rules_.primitive("char") + repeat_suffix(lo.value_or(0), hi) + " " + kQuote;
}

std::string SchemaConverter::visit_integer(const json& s, const std::string& path) {
  const std::optional<Decimal> lo = integer_bound(s, path, true);
  const std::optional<Decimal> hi = integer_bound(s, path, false);
  if (!lo && !hi) return rules_.primitive("integer");
  if (lo && hi && decimal_compare(*lo, *hi) > 0)
    fail("{}: no integer lies within minimum and maximum", child_path(path, "minimum"));
  // Any finite bound is exact here: the digit-range rules work on decimal text, so there is
  // no fallback to an unbounded integer.
  return integer_range(lo, hi);
}

std::string SchemaConverter::visit_number(const json& s, const std::string& path) {
  const json* inc = number_keyword(s, "minimum", path, false);
  const json* exc = number_keyword(s, "exclusiveMinimum", path, true);
  number_keyword(s, "maximum", path, false);
  number_keyword(s, "exclusiveMaximum", path, true);
  // Bounds on non-integers are not written into the grammar (a fraction or exponent makes
  // digit ranges unwieldy), except the sign: a lower bound >= 0 rules out negative numbers.
  // Other bounds fall back to an unbounded number (documented in json_schema_grammar.h).
  const bool non_negative = (inc != nullptr && inc->get<double>() >= 0) ||
                            (exc != nullptr && exc->is_number() && exc->get<double>() >= 0);
  return rules_.primitive(non_negative ? "nonneg-number" : "number");
}

}  // namespace hearth::gbnf
