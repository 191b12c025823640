#include "sampling/schema_int_range.h"

#include <fmt/format.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "sampling/gbnf_text.h"

namespace hearth::gbnf {
namespace {

Decimal parse_decimal(std::string_view text) {
  Decimal d;
  d.negative = !text.empty() && text[0] == '-';
  if (d.negative) text.remove_prefix(1);
  while (text.size() > 1 && text[0] == '0') text.remove_prefix(1);
  d.digits = text.empty() ? "0" : std::string(text);
  if (d.digits == "0") d.negative = false;
  return d;
}

// Magnitudes as digit strings without leading zeros.
int compare_magnitude(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  const int c = a.compare(b);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::string increment(std::string m) {
  size_t i = m.size();
  while (i > 0 && m[i - 1] == '9') m[--i] = '0';
  if (i == 0) return "1" + m;
  ++m[i - 1];
  return m;
}

std::string decrement(std::string m) {  // m > 0
  size_t i = m.size();
  while (m[i - 1] == '0') m[--i] = '9';
  --m[i - 1];
  return parse_decimal(m).digits;
}

bool all_of(std::string_view s, char c) {
  return s.find_first_not_of(c) == std::string_view::npos;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) {
    if (p.empty()) continue;
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

std::string any_digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? "[0-9]" : fmt::format("[0-9]{{{}}}", n);
}

// Fixed digits, then one digit in [lo, hi], then n free digits: "12" [3-9] [0-9]{2}.
std::string digits_then(std::string fixed, char lo, char hi, size_t n) {
  std::string cls;
  if (lo == hi) {
    fixed.push_back(lo);
  } else {
    cls = fmt::format("[{}-{}]", lo, hi);
  }
  return join({fixed.empty() ? "" : literal(fixed), cls, any_digits(n)}, " ");
}

// The digit strings of rest's length that are >= rest (up) or <= rest (!up), each after
// `head`: at each position, rest's digits so far and then a larger (smaller) digit, free
// digits after; the last position also admits its own digit. A flat list of alternatives,
// without nesting: engines bound the depth of parentheses, and numbers can have 300 digits.
void one_side(const std::string& head, std::string_view rest, bool up,
              std::vector<std::string>& alts) {
  const size_t m = rest.size();
  for (size_t i = 0; i < m; ++i) {
    const char d = rest[i];
    const bool last = i + 1 == m;
    const char lo = up ? static_cast<char>(last ? d : d + 1) : '0';
    const char hi = up ? '9' : static_cast<char>(last ? d : d - 1);
    if (lo <= hi)
      alts.push_back(digits_then(head + std::string(rest.substr(0, i)), lo, hi, m - i - 1));
  }
}

// The digit strings of x's length from x to y (x <= y, same length): after their common
// prefix, x's digit followed by anything >= x's rest, the digits strictly between followed by
// anything, and y's digit followed by anything <= y's rest (a side whose rest is all 0s / 9s
// joins the middle).
std::string same_length_range(std::string_view x, std::string_view y) {
  size_t p = 0;
  while (p < x.size() && x[p] == y[p]) ++p;
  const std::string head(x.substr(0, p));
  if (p == x.size()) return literal(head);
  const std::string_view rx = x.substr(p + 1), ry = y.substr(p + 1);
  const bool x_low = all_of(rx, '0'), y_high = all_of(ry, '9');
  const char full_lo = x_low ? x[p] : static_cast<char>(x[p] + 1);
  const char full_hi = y_high ? y[p] : static_cast<char>(y[p] - 1);
  std::vector<std::string> alts;
  if (!x_low) one_side(head + x[p], rx, true, alts);
  if (full_lo <= full_hi) alts.push_back(digits_then(head, full_lo, full_hi, rx.size()));
  if (!y_high) one_side(head + y[p], ry, false, alts);
  return join(alts, " | ");
}

// The magnitudes (no leading zeros) from a to b, b absent: no upper bound.
std::string magnitude_range(const std::string& a, const std::optional<std::string>& b) {
  const size_t la = a.size();
  if (!b) {
    if (a == "0") return R"("0" | [1-9] [0-9]*)";
    // a's length from a upwards, then every longer number.
    if (a == std::string("1") + std::string(la - 1, '0'))
      return std::string("[1-9] [0-9]") + repeat_suffix(la - 1, {});
    const std::string longer = std::string("[1-9] [0-9]") + repeat_suffix(la, {});
    return same_length_range(a, std::string(la, '9')) + " | " + longer;
  }
  const size_t lb = b->size();
  if (la == lb) return same_length_range(a, *b);
  std::vector<std::string> alts;
  alts.push_back(same_length_range(a, std::string(la, '9')));
  if (lb > la + 1) {  // the lengths strictly between: every number of those lengths
    alts.push_back(std::string("[1-9] [0-9]") + repeat_suffix(la, lb - 2));
  }
  alts.push_back(same_length_range(std::string("1") + std::string(lb - 1, '0'), *b));
  return join(alts, " | ");
}

// The integer next to the number a JSON text wrote as `v`, upwards (ceil) or downwards. The
// value is taken from the shortest decimal that reads back as `v` ("1e+30"), not from the
// double's exact binary value (1000000000000000019884624838656), which is what the schema's
// author meant by 1e30.
Decimal rounded(double v, bool up) {
  const std::string text = fmt::format("{}", v);  // shortest round-trip form
  const bool negative = text[0] == '-';
  const size_t e_pos = text.find_first_of("eE");
  const std::string mantissa = text.substr(negative ? 1 : 0, e_pos - (negative ? 1 : 0));
  const long exponent = e_pos == std::string::npos ? 0 : std::stol(text.substr(e_pos + 1));
  const size_t dot = mantissa.find('.');
  std::string digits = mantissa;
  if (dot != std::string::npos) digits.erase(dot, 1);
  // The position of the decimal point within `digits`, after the exponent.
  const long point = static_cast<long>(dot == std::string::npos ? mantissa.size() : dot) + exponent;
  std::string whole = "0";
  std::string_view fraction = digits;
  if (point > 0) {
    const auto n = static_cast<size_t>(point);
    whole = n <= digits.size() ? digits.substr(0, n) : digits + std::string(n - digits.size(), '0');
    fraction = n <= digits.size() ? std::string_view(digits).substr(n) : std::string_view();
  }
  const Decimal d = parse_decimal((negative ? "-" : "") + whole);
  const bool exact = all_of(fraction, '0');
  // A dropped fraction moves a positive number down and a negative one up (towards zero).
  if (!exact && up && !negative) return decimal_add(d, 1);
  if (!exact && !up && negative) return decimal_add(d, -1);
  return d;
}

}  // namespace

Decimal decimal_ceil(double v) {
  return rounded(v, true);
}
Decimal decimal_floor(double v) {
  return rounded(v, false);
}
Decimal decimal_of(long long v) {
  return parse_decimal(fmt::format("{}", v));
}
Decimal decimal_of_unsigned(unsigned long long v) {
  return parse_decimal(fmt::format("{}", v));
}

Decimal decimal_add(const Decimal& d, int delta) {
  const bool away_from_zero = d.negative == (delta < 0);
  if (away_from_zero) return Decimal{d.negative, increment(d.digits)};
  if (d.digits == "0") return Decimal{true, "1"};  // 0 - 1
  return parse_decimal(std::string(d.negative ? "-" : "") + decrement(d.digits));
}

int decimal_compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int c = compare_magnitude(a.digits, b.digits);
  return a.negative ? -c : c;
}

std::string integer_range(const std::optional<Decimal>& lo, const std::optional<Decimal>& hi) {
  std::vector<std::string> alts;
  if (!lo || lo->negative) {  // the negative part: magnitudes from max(1, -hi) to -lo
    const std::string from = hi && hi->negative ? hi->digits : "1";
    const std::optional<std::string> to = lo ? std::optional(lo->digits) : std::nullopt;
    if (!to || compare_magnitude(from, *to) <= 0)
      alts.push_back(std::string(R"("-" )") + atom(magnitude_range(from, to)));
  }
  if (!hi || !hi->negative) {  // the non-negative part: max(0, lo) to hi
    const std::string from = lo && !lo->negative ? lo->digits : "0";
    const std::optional<std::string> to = hi ? std::optional(hi->digits) : std::nullopt;
    if (!to || compare_magnitude(from, *to) <= 0) alts.push_back(magnitude_range(from, to));
  }
  return join(alts, " | ");
}

}  // namespace hearth::gbnf
