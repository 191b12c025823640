// Arrays: prefixItems (tuple positions), then items for the rest, within minItems / maxItems.
#include <algorithm>

#include "sampling/gbnf_text.h"
#include "sampling/json_schema_converter.h"
#include "util/error.h"

namespace hearth::gbnf {
namespace {

const std::string kSep = R"(ws "," ws)";

// Beyond this many tuple positions, each optional tail is a rule of its own, so that the
// grammar text does not nest parentheses once per position.
constexpr size_t kInlineTuple = 8;

}  // namespace

// The elements inside the brackets, "" for none; the first element has no separator before
// it. Element i of `prefix` may be left out (with all after it) when i >= min.
std::string SchemaConverter::elements(std::vector<std::string> prefix,
                                      const std::optional<std::string>& rest, uint64_t min,
                                      std::optional<uint64_t> max, const std::string& hint,
                                      const std::string& path) {
  if (max && *max < prefix.size()) prefix.resize(*max);
  const uint64_t k = prefix.size();
  const uint64_t rest_lo = min > k ? min - k : 0;
  std::optional<uint64_t> rest_hi;
  if (!rest) {
    rest_hi = 0;
  } else if (max) {
    rest_hi = *max - k;
  }
  if (k == 0) {
    if (rest_hi == 0u) return "";
    // The first element, then the others each after a separator.
    const uint64_t more_lo = rest_lo > 0 ? rest_lo - 1 : 0;
    const std::optional<uint64_t> more_hi = rest_hi ? std::optional(*rest_hi - 1) : std::nullopt;
    if (more_hi == 0u) return *rest;
    return *rest + " ( " + kSep + " " + *rest + " )" + repeat_suffix(more_lo, more_hi);
  }
  std::string tail;
  if (rest_hi != 0u) tail = "( " + kSep + " " + *rest + " )" + repeat_suffix(rest_lo, rest_hi);
  for (uint64_t i = k; i-- > 1;) {
    std::string seg = kSep + " " + prefix[i] + (tail.empty() ? "" : " " + tail);
    if (i >= min) seg = "( " + seg + " )?";
    tail = k > kInlineTuple ? rules_.add(child_hint(hint, "tail"), seg, where(path)) : seg;
  }
  return prefix[0] + (tail.empty() ? "" : " " + tail);
}

std::string SchemaConverter::visit_array(const json& s, const std::string& path,
                                         const std::string& hint, int depth) {
  const std::optional<uint64_t> min = count_keyword(s, "minItems", path);
  const std::optional<uint64_t> max = count_keyword(s, "maxItems", path);
  if (min && max && *min > *max)
    fail("{}: minItems is greater than maxItems", child_path(path, "minItems"));
  if (min && *min > kMaxRepeat)
    fail("{}: more than {} is not supported", child_path(path, "minItems"), kMaxRepeat);
  if (max && *max > kMaxRepeat)
    fail("{}: more than {} is not supported", child_path(path, "maxItems"), kMaxRepeat);
  // The tuple part: prefixItems, or draft 4's items: [...] (then additionalItems is the rest).
  const bool draft4_tuple =
      !s.contains("prefixItems") && s.contains("items") && s["items"].is_array();
  const char* tuple_key = draft4_tuple ? "items" : "prefixItems";
  const char* rest_key = draft4_tuple ? "additionalItems" : "items";
  const json tuple = s.value(tuple_key, json::array());
  if (!tuple.is_array()) fail("{}: must be an array of schemas", child_path(path, tuple_key));
  const json rest_schema = s.value(rest_key, json(true));
  if (!rest_schema.is_boolean() && !rest_schema.is_object())
    fail("{}: must be a schema", child_path(path, rest_key));
  if (tuple.empty() && rest_schema == true && !min && !max) return rules_.primitive("array");

  StructureScope scope(structure_);
  std::vector<std::string> prefix;
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (max && i >= *max) break;  // positions past maxItems never occur
    prefix.push_back(visit(tuple[i], child_path(child_path(path, tuple_key), std::to_string(i)),
                           child_hint(hint, std::string("item-") + std::to_string(i)), depth + 1));
  }
  std::optional<std::string> rest;
  if (rest_schema != false)
    rest = visit(rest_schema, child_path(path, rest_key), child_hint(hint, "item"), depth + 1);
  if (!rest && min.value_or(0) > tuple.size())
    fail("{}: more items than the tuple allows, and {} is false", child_path(path, "minItems"),
         rest_key);
  const std::string inner = elements(std::move(prefix), rest, min.value_or(0), max, hint, path);
  const std::string ws = rules_.primitive("ws");
  if (inner.empty()) return R"("[" )" + ws + R"( "]")";
  if (min.value_or(0) > 0) return R"("[" )" + ws + " " + inner + " " + ws + R"( "]")";
  return R"("[" )" + ws + " ( " + inner + " " + ws + R"( )? "]")";
}

}  // namespace hearth::gbnf
