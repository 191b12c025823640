// GBNF for the JSON integers within bounds (JSON Schema's minimum / maximum on "integer"),
// exactly: digit-range alternatives over decimal strings, so any finite bound works, however
// large.
#pragma once

#include <optional>
#include <string>

namespace hearth::gbnf {

// A signed integer as decimal text: digits without leading zeros ("0" for zero, never -0).
struct Decimal {
  bool negative = false;
  std::string digits = "0";
};

// The integer nearest `v` on the side that keeps `v`'s bound: ceil for a lower bound (up),
// floor for an upper bound. `v` must be finite.
Decimal decimal_ceil(double v);
Decimal decimal_floor(double v);
Decimal decimal_of(long long v);
Decimal decimal_of_unsigned(unsigned long long v);
Decimal decimal_add(const Decimal& d, int delta);  // delta is +1 or -1
int decimal_compare(const Decimal& a, const Decimal& b);

// A GBNF expression matching the JSON integers n with lo <= n <= hi (an absent side is
// unbounded), written without leading zeros or "-0". The range must not be empty.
std::string integer_range(const std::optional<Decimal>& lo, const std::optional<Decimal>& hi);

}  // namespace hearth::gbnf
