// Jinja's string filters: str(value) in, a string out. A result keeps the template-text mark of
// its input only where no outside text (an argument, an escape) went into it.
#include <algorithm>
#include <optional>

#include "chat/filters.h"
#include "chat/py_string.h"
#include "chat/text_wrap.h"

namespace hearth::chat {
namespace {

using Kind = TemplateError::Kind;

// upper, lower, title, capitalize: one case mapping of str(value).
template <std::string (*Map)(std::string_view)>
Value recase(Interpreter& in, const Value& v, CallArgs&) {
  return string_result(in, Map(soft_str(v).str()), is_trusted_string(v));
}

Value trim(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& chars = call_arg(a, 0, "chars");
  std::optional<std::string> c;
  if (chars.is_string()) c = chars.str();
  return string_result(in, py::strip(soft_str(v).str(), c, true, true), is_trusted_string(v));
}

Value to_string(Interpreter&, const Value& v, CallArgs&) {
  return soft_str(v);
}

// Output is not autoescaped here, so `safe` has nothing to mark.
Value safe(Interpreter&, const Value& v, CallArgs&) {
  return v;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// e, escape, forceescape.
Value escape(Interpreter& in, const Value& v, CallArgs&) {
  return string_result(in, html_escape(soft_str(v).str()), false);
}

Value wordcount(Interpreter&, const Value& v, CallArgs&) {
  const std::string s = soft_str(v).str();
  int64_t n = 0;
  bool in_word = false;
  for (unsigned char c : s) {
    const bool w = std::isalnum(c) || c == '_' || c >= 0x80;
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

Value replace(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = soft_str(v);
  const Value& from = call_arg(a, 0, "old");
  const Value& to = call_arg(a, 1, "new");
  const int64_t count = int_arg(in, call_arg(a, 2, "count"), -1, "count");
  const bool trusted = is_trusted_string(v) && (!to.is_string() || to.str_ref().fully_trusted());
  const std::string f = from.to_str(), t = to.to_str();
  if (f.empty()) {
    in.check_size(s.str().size() + (s.str().size() + 1) * t.size());
  } else if (t.size() > f.size()) {
    in.check_size(s.str().size() + py::count(s.str(), f) * (t.size() - f.size()));
  }
  return string_result(in, py::replace(s.str(), f, t, count), trusted);
}

std::string indent_text(const std::string& s0, const std::string& ind, bool first, bool blank) {
  const std::string s = s0 + "\n";  // Jinja's quirk so that splitlines keeps a last empty line
  const auto lines = py::splitlines(s);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) rv += "\n" + ind;
      rv += lines[i];
    }
  } else {
    rv = lines.empty() ? std::string() : lines[0];
    for (size_t i = 1; i < lines.size(); ++i) rv += "\n" + (lines[i].empty() ? "" : ind) + lines[i];
  }
  if (first) rv = ind + rv;
  return rv;
}

Value indent(Interpreter& in, const Value& v, CallArgs& a) {
  const Value& w = call_arg(a, 0, "width");
  std::string ind = "    ";
  if (w.is_string()) {
    ind = w.str();
  } else if (!w.is_undefined()) {
    const int64_t n = std::clamp<int64_t>(int_arg(in, w, 4, "width"), 0, 4096);
    ind = std::string(static_cast<size_t>(n), ' ');
  }
  const Value s = soft_str(v);
  in.check_size(s.str().size() + (py::count(s.str(), "\n") + 2) * ind.size());
  return string_result(
      in,
      indent_text(s.str(), ind, call_arg(a, 1, "first").truthy(), call_arg(a, 2, "blank").truthy()),
      is_trusted_string(v));
}

// str.center(width), the width capped at the output limit.
Value center(Interpreter& in, const Value& v, CallArgs& a) {
  const int64_t width =
      std::clamp<int64_t>(int_arg(in, call_arg(a, 0, "width"), 80, "width"), 0,
                          static_cast<int64_t>(in.options().limits.max_output_bytes));
  CallArgs ca;
  ca.positional.push_back(Value::integer(width));
  return call_method(in, soft_str(v), "center", ca);
}

Value truncate(Interpreter& in, const Value& v, CallArgs& a) {
  const Value s = soft_str(v);
  const int64_t length = int_arg(in, call_arg(a, 0, "length"), 255, "length");
  const bool killwords = call_arg(a, 1, "killwords").truthy();
  const Value& endv = call_arg(a, 2, "end");
  const std::string end = endv.is_string() ? endv.str() : "...";
  const int64_t leeway = int_arg(in, call_arg(a, 3, "leeway"), 5, "leeway");
  auto off = utf8_offsets(s.str());
  const auto n = static_cast<int64_t>(off.size() - 1);
  if (n <= length + leeway) return s;
  const int64_t keep = std::max<int64_t>(length - static_cast<int64_t>(utf8_length(end)), 0);
  std::string head = s.str().substr(0, off[static_cast<size_t>(keep)]);
  if (!killwords) {
    const size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head.resize(sp);
  }
  return string_result(in, head + end, false);
}

// Jinja's wordwrap: textwrap.wrap for each line of the text, lines joined by wrapstring
// (default "\n"); empty lines stay.
Value wordwrap(Interpreter& in, const Value& v, CallArgs& a) {
  if (v.is_undefined()) in.fail(Kind::Undefined, "wordwrap of an undefined value");
  if (!v.is_string())
    in.fail(Kind::Type, "'" + v.type_name() + "' object has no attribute 'splitlines'");
  const int64_t width = int_arg(in, call_arg(a, 0, "width"), 79, "width");
  const Value& long_words = call_arg(a, 1, "break_long_words");
  const Value& wrapstring = call_arg(a, 2, "wrapstring");
  const Value& hyphens = call_arg(a, 3, "break_on_hyphens");
  if (!wrapstring.is_undefined() && !wrapstring.is_none() && !wrapstring.is_string())
    in.fail(Kind::Type, "wordwrap: wrapstring must be a string, not " + wrapstring.type_name());
  const std::string sep = wrapstring.is_string() ? wrapstring.str() : "\n";
  py::WrapOptions o;
  o.break_long_words = long_words.is_undefined() || long_words.truthy();
  o.split_on_hyphens = hyphens.is_undefined() || (hyphens.is_bool() && hyphens.as_bool());
  o.break_long_on_hyphens = hyphens.is_undefined() || hyphens.truthy();
  const std::vector<std::string> paragraphs = py::splitlines(v.str());
  if (!paragraphs.empty() && width <= 0)
    in.fail(Kind::Runtime, "invalid width " + std::to_string(width) + " (must be > 0)");
  o.width = static_cast<size_t>(std::max<int64_t>(width, 1));
  in.charge(v.str().size());
  std::string out;
  for (size_t p = 0; p < paragraphs.size(); ++p) {
    if (p) out += sep;
    const std::vector<std::string> lines = py::wrap(paragraphs[p], o);
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i) out += sep;
      out += lines[i];
    }
    in.check_size(out.size());
  }
  const bool trusted = v.str_ref().fully_trusted() &&
                       (!wrapstring.is_string() || wrapstring.str_ref().fully_trusted());
  return Value::string(std::move(out), trusted);
}

// `fmt | format(args)` is Python's `fmt % args` (one argument alone, several as a tuple).
Value percent_format(Interpreter& in, const Value& v, CallArgs& a) {
  if (!v.is_string()) in.fail(Kind::Type, "format: the value must be a string");
  Value args = a.positional.size() == 1 ? a.positional[0] : Value::tuple(a.positional);
  return python_percent_format(in, v, args);
}

constexpr NamedFilter kStringFilters[] = {
    {"upper", recase<py::upper>},
    {"lower", recase<py::lower>},
    {"title", recase<py::title>},
    {"capitalize", recase<py::capitalize>},
    {"trim", trim},
    {"string", to_string},
    {"safe", safe},
    {"e", escape},
    {"escape", escape},
    {"forceescape", escape},
    {"wordcount", wordcount},
    {"replace", replace},
    {"indent", indent},
    {"center", center},
    {"truncate", truncate},
    {"wordwrap", wordwrap},
    {"format", percent_format},
};

}  // namespace

std::span<const NamedFilter> string_filters() {
  return kStringFilters;
}

}  // namespace hearth::chat
